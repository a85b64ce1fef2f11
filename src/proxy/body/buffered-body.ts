import type { IncomingMessage } from 'node:http';
import type { ReplayHold } from './replay-body.js';
import type { RequestBody } from './body-source.js';
import type { UploadPace } from './upload-pace.js';

/**
 * A request body received whole before it goes upstream (see request-body.ts). Its declared
 * length is booked in the replay budget by the caller and given back by `settle`; the Buffer is
 * what the engine sends and, unchanged, what a replay or retry sends again. `settle` also lets go
 * of the Buffer: the handler keeps this object until the response ends, and a slow-reading client
 * must not hold the copy outside the budget meanwhile. A replay comes before `settle` or not at all.
 */
export class BufferedBody implements RequestBody {
  readonly replayable = true;
  readonly #req: IncomingMessage;
  readonly #hold: ReplayHold;
  readonly #pace: UploadPace | undefined;
  #chunks: Buffer[] | undefined = [];
  #size = 0;
  #whole: Buffer | undefined;
  #send: ((content: Buffer) => void) | undefined;

  /** `hold`: the body's booking, its declared length already taken; closed by `settle`. */
  constructor(req: IncomingMessage, hold: ReplayHold, pace: UploadPace | undefined) {
    this.#req = req;
    this.#hold = hold;
    this.#pace = pace;
    req.on('data', this.#onData);
    req.once('end', this.#onEnd);
  }

  readonly #onData = (chunk: Buffer): void => {
    this.#pace?.progress(chunk.length);
    if (!this.#chunks) return; // abandoned: read and discarded
    this.#chunks.push(chunk);
    this.#size += chunk.length;
  };

  readonly #onEnd = (): void => {
    this.#pace?.done();
    const chunks = this.#chunks;
    if (!chunks) return;
    // One chunk (a small body arrives with its headers) is sent as it is, without a copy.
    this.#whole = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.#size);
    this.#chunks = undefined;
    const send = this.#send;
    this.#send = undefined;
    send?.(this.#whole);
  };

  ready(send: (content: Buffer) => void): void {
    if (this.#whole) send(this.#whole);
    else this.#send = send;
  }

  async again(): Promise<Buffer | undefined> {
    return this.#whole;
  }

  settle(): void {
    this.#pace?.done();
    // Given back to the budget, so no longer held here: again() answers undefined from now on.
    this.#whole = undefined;
    this.#chunks = undefined;
    this.#send = undefined;
    this.#hold.close();
  }

  abandon(): void {
    this.settle();
    // Read the rest and discard it, so that the client can finish sending and read its answer.
    if (!this.#req.complete) this.#req.resume();
  }
}
