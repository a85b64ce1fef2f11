import type { IncomingMessage } from 'node:http';
import type { CaptureDropReason } from '../../observability/metrics.js';
import { BufferedBody } from './buffered-body.js';
import { ReplayTee, type ReplayBudget } from './replay-body.js';
import type { UploadPace, UploadPaces } from './upload-pace.js';
import type { UploadShare, UploadSlot } from './upload-share.js';
import type { RequestBody } from './body-source.js';

export type { RequestBody } from './body-source.js';

export interface ReplayCapture {
  /** Largest body copied for replay (and received before dispatch), bytes; 0: both off. */
  limit: number;
  budget: ReplayBudget;
  onDrop(reason: CaptureDropReason): void;
}

/** True when the request has a body to send (Content-Length above 0, or chunked). */
export function hasBody(req: IncomingMessage): boolean {
  if (req.headers['transfer-encoding'] !== undefined) return true;
  const length = req.headers['content-length'];
  return length !== undefined && length !== '0';
}

/**
 * The one request-body source for both engines (docs/design.md, "Request bodies"). A body with a
 * Content-Length within `proxy.replayBodyLimitBytes` is received whole before the request takes a
 * pooled service connection (nginx's `proxy_request_buffering on`), so a slow client costs the
 * service pool nothing; the engine gets a Buffer, which is also the replay copy. A larger or
 * chunked body streams (a ReplayTee, a copy kept while it fits), and only within the source's
 * share of the pool and the part of it streams may use (upload-share.ts). Every body, either way, is held to the minimum upload
 * rate (upload-pace.ts) while it is read. Built once per handler.
 */
export class RequestBodies {
  constructor(readonly replay: ReplayCapture, readonly paces: UploadPaces, readonly share: UploadShare) {}

  /**
   * The body of a request for which `hasBody` is true. `source` names the client's share of the
   * replay budget and, with `route`, of the pool it streams in; `onSlow` runs once if the upload
   * falls below the minimum rate.
   */
  open(req: IncomingMessage, source: string, route: string, onSlow: () => void): RequestBody {
    const replay = this.replay;
    if (req.headers['transfer-encoding'] === undefined) {
      const length = Number(req.headers['content-length']);
      if (length <= replay.limit) {
        // Booked whole up front: the budget (and the source's part of it) bounds what slow
        // clients can make the sidecar hold; a small one finds the reserve kept per connection.
        const hold = replay.budget.open(source);
        const refused = hold.takeWhole(length);
        if (!refused) return new BufferedBody(req, hold, this.paces.watch(onSlow));
        hold.close();
        replay.onDrop(refused);
      }
      return new StreamedRequestBody(req, this, source, route, 0, onSlow);
    }
    return new StreamedRequestBody(req, this, source, route, replay.limit, onSlow);
  }
}

/**
 * A body that streams upstream: it waits for its share (unread, so the client is held back),
 * then a ReplayTee reads it, paced, keeping a copy of up to `copyLimit` bytes.
 */
class StreamedRequestBody implements RequestBody {
  readonly replayable: boolean;
  readonly #req: IncomingMessage;
  readonly #bodies: RequestBodies;
  readonly #source: string;
  readonly #copyLimit: number;
  readonly #onSlow: () => void;
  readonly #slot: UploadSlot;
  #tee: ReplayTee | undefined;
  #pace: UploadPace | undefined;
  #send: ((content: ReplayTee) => void) | undefined;
  #over = false;

  constructor(req: IncomingMessage, bodies: RequestBodies, source: string, route: string, copyLimit: number, onSlow: () => void) {
    this.replayable = copyLimit > 0;
    this.#req = req;
    this.#bodies = bodies;
    this.#source = source;
    this.#copyLimit = copyLimit;
    this.#onSlow = onSlow;
    this.#slot = bodies.share.take(`${route} ${source}`, this.#start, route);
  }

  readonly #start = (): void => {
    if (this.#over) return;
    const { replay, paces } = this.#bodies;
    const hold = this.#copyLimit > 0 ? replay.budget.open(this.#source) : undefined;
    const tee = new ReplayTee(this.#req, this.#copyLimit, hold, replay.onDrop);
    tee.pace = this.#pace = paces.watch(this.#onSlow);
    this.#tee = tee;
    // Complete (or gone), the body no longer holds an upstream connection for its upload.
    this.#req.once('end', this.#endSlot);
    this.#req.once('close', this.#endSlot);
    const send = this.#send;
    this.#send = undefined;
    send?.(tee);
  };

  readonly #endSlot = (): void => this.#slot.end();

  ready(send: (content: ReplayTee) => void): void {
    if (this.#tee) send(this.#tee);
    else this.#send = send;
  }

  async again(): Promise<Buffer | undefined> {
    return this.#tee?.captured();
  }

  settle(): void {
    this.#tee?.release();
    this.#pace?.done();
    this.#slot.end();
  }

  abandon(): void {
    if (this.#over) return;
    this.#over = true;
    this.#send = undefined;
    this.settle();
    // Read the rest and discard it, so that the client can finish sending and read its answer
    // (the tee, whether or not an engine still reads it, detaches from its consumer).
    if (this.#tee) this.#tee.destroy();
    else if (!this.#req.complete) this.#req.resume();
  }
}
