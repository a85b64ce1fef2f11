import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';

/**
 * A response body still arriving from the upstream. Exactly one of `pipeTo`, `readAll` or
 * `destroy` is called. The engines implement it natively (undici writes each chunk straight
 * into the client response, without a stream in between), so the hot path does not pay for
 * a Readable and pipe() per request.
 */
export interface UpstreamBody {
  /**
   * Writes the rest of the body into `res` (whose head is already written) with back-pressure
   * and ends it. An upstream failure destroys `res`; a client going away is handled by the
   * request's abort signal.
   */
  pipeTo(res: ServerResponse): void;
  /** The whole body, or undefined (and the exchange aborted) once it exceeds `limit` bytes. */
  readAll(limit: number): Promise<Buffer | undefined>;
  /** Abandons the body and releases the upstream exchange. */
  destroy(): void;
}

/** An already complete body (a held 401 answer). */
export function bufferedBody(body: Buffer): UpstreamBody {
  return {
    pipeTo: (res) => void res.end(body),
    readAll: async () => body,
    destroy: () => undefined,
  };
}

/** A body that is a Node stream (the http-proxy engine's upstream IncomingMessage). */
export function streamBody(stream: Readable): UpstreamBody {
  return {
    pipeTo(res) {
      // pipe() rather than pipeline(): pipeline allocates an AbortController per call.
      stream.once('error', () => res.destroy());
      res.once('close', () => {
        if (!res.writableFinished) stream.destroy();
      });
      stream.pipe(res);
    },
    async readAll(limit) {
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        size += chunk.length;
        if (size > limit) {
          stream.destroy();
          return undefined;
        }
        chunks.push(chunk);
      }
      return Buffer.concat(chunks);
    },
    destroy: () => void stream.destroy(),
  };
}
