import type { ReplayTee } from './replay-body.js';

/**
 * A request body as the proxy handler sees it (request-body.ts makes them): received whole
 * (buffered-body.ts) or streamed within its source's share.
 */
export interface RequestBody {
  /** false: streamed without a copy, so the request cannot be sent a second time. */
  readonly replayable: boolean;
  /**
   * Runs `send` once the body may go upstream: complete, or a stream holding its share. Never,
   * if the client goes away or the upload is cut first.
   */
  ready(send: (content: Buffer | ReplayTee) => void): void;
  /**
   * The whole body for a second attempt, or undefined when it cannot be sent again. Call it only
   * once the exchange that read the body is over (answered or failed), and before `settle`: a
   * settled body holds no copy, and this answers undefined.
   */
  again(): Promise<Buffer | undefined>;
  /** The request is answered: the copy is let go and goes back to the budget, the pace and share end. Idempotent. */
  settle(): void;
  /** The request is over, answered or not: as settle, and the rest of the client's body is read and discarded. Idempotent. */
  abandon(): void;
}
