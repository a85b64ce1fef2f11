import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import type { CaptureDropReason } from '../../observability/metrics.js';
import type { StreamedBody } from '../../upstream/engine.js';
import type { UploadPace } from './upload-pace.js';

/**
 * The room a request body received whole may always book (ReplayHold.takeWhole): `bytes` in all,
 * kept out of everyone else's reach, and at most `perConnection` of it for one body. Sized as
 * `perConnection` × every client connection the listeners accept, and a connection holds one body
 * at a time (its requests are handled in order: connection-order.ts), so a small complete body
 * always finds its room, whatever other clients hold and whichever addresses they use.
 */
export interface ReplayReserve {
  bytes: number;
  perConnection: number;
}

/**
 * The bytes held for replay across every request in flight. Each request's copy is bounded by
 * `proxy.replayBodyLimitBytes`; this bounds their sum (`proxy.replayBufferTotalBytes`), so 50
 * concurrent uploads cannot hold 50 × the per-request limit, and each source's part of that sum
 * (`perSource`, see docs/traps.md T36), so one source's slow uploads cannot book it all and leave
 * every other client's uploads without a replay. A request that would exceed either simply loses
 * its replay (its 401 is passed back, as for a body above the limit).
 *
 * Sources are addresses, and addresses are not clients: one process can use several (127.0.0.1 …
 * 127.0.0.4), and every app on a host uses one. So a `reserve` is kept apart for small bodies
 * received whole, one per client connection ({@link ReplayReserve}): what sources book in general
 * never reaches it (docs/design.md, "Request bodies").
 *
 * A body books through a `ReplayHold` opened once for its source (the one Map lookup per body);
 * its chunks then book without a lookup, and `close` gives back exactly what it booked.
 */
export class ReplayBudget {
  readonly #total: Held = { held: 0 };
  readonly #reserved: Held = { held: 0 };
  readonly #sources = new Map<string, SourceHeld>();
  readonly perSource: number;
  /** What sources book in general: the capacity less the reserve. */
  readonly general: number;
  readonly reserve: ReplayReserve;

  /**
   * `perSource`: most bytes one source may hold at once; the whole capacity when absent.
   * `reserve`: the room kept for small bodies received whole; none when absent.
   */
  constructor(readonly capacity: number, perSource = capacity, reserve: ReplayReserve = { bytes: 0, perConnection: 0 }) {
    const bytes = Math.min(Math.max(0, reserve.bytes), capacity);
    this.reserve = { bytes, perConnection: Math.min(reserve.perConnection, bytes) };
    this.general = capacity - bytes;
    this.perSource = Math.min(perSource, this.general);
  }

  /** Bytes currently held, the reserve included (the `b2b_sidecar_replay_buffer_bytes` gauge). */
  get held(): number {
    return this.#total.held + this.#reserved.held;
  }

  /** Bytes currently held in the reserve. */
  get reservedHeld(): number {
    return this.#reserved.held;
  }

  /** Bytes currently held for `source` outside the reserve (tests and diagnostics). */
  heldBy(source: string): number {
    return this.#sources.get(source)?.held ?? 0;
  }

  /** Sources with a hold open (tests: none is left behind once every hold is closed). */
  get sources(): number {
    return this.#sources.size;
  }

  /** A hold for one body from `source`; it must be closed once (closing gives back all it booked). */
  open(source: string): ReplayHold {
    let account = this.#sources.get(source);
    if (!account) {
      account = { held: 0, holds: 0 };
      this.#sources.set(source, account);
    }
    account.holds++;
    return new ReplayHold(this.#total, account, this.general, this.perSource, () => this.#sources.delete(source), this.#reserved, this.reserve);
  }
}

interface Held {
  held: number;
}

interface SourceHeld extends Held {
  /** Holds open: the entry goes once the last one closes. */
  holds: number;
}

/** One body's booking in the replay budget (ReplayBudget.open). */
export class ReplayHold {
  #booked = 0;
  /** Booked in the reserve (takeWhole), given back there. */
  #reservedBooked = 0;
  #closed = false;

  constructor(
    readonly total: Held,
    readonly source: SourceHeld,
    readonly capacity: number,
    readonly perSource: number,
    readonly forget: () => void,
    readonly reserved: Held = { held: 0 },
    readonly reserve: ReplayReserve = { bytes: 0, perConnection: 0 },
  ) {}

  /** Bytes this hold has booked. */
  get booked(): number {
    return this.#booked + this.#reservedBooked;
  }

  /**
   * Books `bytes` more; undefined when booked, else why not (nothing is booked then). A source past
   * its share may still book while one share of the budget stays free for the others: the share
   * binds only when another source could need that room, so a sidecar whose one client is a local
   * app (one source) keeps most of the budget, and no source can take the last share.
   */
  take(bytes: number): CaptureDropReason | undefined {
    if (this.#closed) return 'global_limit';
    if (this.total.held + bytes > this.capacity) return 'global_limit';
    if (this.source.held + bytes > this.perSource && this.total.held + bytes > this.capacity - this.perSource) return 'source_limit';
    this.source.held += bytes;
    this.total.held += bytes;
    this.#booked += bytes;
    return undefined;
  }

  /**
   * Books a whole body of `bytes` at once (one received whole before it goes upstream): as `take`,
   * and when that is refused, in the reserve if the body is within its per-connection room.
   */
  takeWhole(bytes: number): CaptureDropReason | undefined {
    const refused = this.take(bytes);
    if (!refused || this.#closed || this.booked > 0) return refused;
    if (bytes > this.reserve.perConnection || this.reserved.held + bytes > this.reserve.bytes) return refused;
    this.reserved.held += bytes;
    this.#reservedBooked = bytes;
    return undefined;
  }

  /** Gives back everything booked and ends the hold. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.source.held -= this.#booked;
    this.total.held -= this.#booked;
    this.reserved.held -= this.#reservedBooked;
    this.#booked = 0;
    this.#reservedBooked = 0;
    if (--this.source.holds === 0) this.forget();
  }
}


const ignore = () => undefined;
// undici's abort code, not ECONNRESET: the service did not reset anything.
const clientAborted = () => Object.assign(new Error('client aborted the request body'), { code: 'UND_ERR_ABORTED' });

/**
 * A request body streamed upstream at once while a copy is kept for one replay (after a 401 or a
 * reset on a stale connection). The copy is dropped as soon as it outgrows the per-request limit
 * or the shared budget; then the request simply cannot be replayed.
 *
 * It reads the client's IncomingMessage itself and is the Readable an engine consumes, with the
 * client's back-pressure passed through. When the engine stops reading (its exchange failed or
 * the service answered before reading everything), `captured()` keeps reading the client into
 * the copy, so a replay can still send the whole body.
 */
export class ReplayTee extends Readable implements StreamedBody {
  readonly #req: IncomingMessage;
  readonly #limit: number;
  readonly #hold: ReplayHold | undefined;
  readonly #onDrop: (reason: CaptureDropReason) => void;
  #chunks: Buffer[] | undefined = [];
  #size = 0;
  #ended = false;
  #aborted = false;
  /** No consumer any more: chunks only go to the copy. */
  #detached = false;
  #waiters: Array<(body: Buffer | undefined) => void> = [];
  /** The minimum upload rate's watch of this body, if any. */
  pace: UploadPace | undefined;
  /** The engine's: runs as chunks are handed on and at the end (its header deadline restarts). */
  onProgress: (() => void) | undefined = undefined;

  /**
   * `limit` 0 or no `hold`: no copy at all (a body declared larger than the limit, or replay off).
   * The tee closes the hold when it lets go of its copy.
   */
  constructor(req: IncomingMessage, limit: number, hold: ReplayHold | undefined, onDrop: (reason: CaptureDropReason) => void) {
    // One client chunk buffered at most before the client is paused: the copy is the buffer.
    super({ highWaterMark: 16 * 1024 });
    if (limit === 0 || !hold) {
      this.#chunks = undefined;
      hold?.close();
    }
    this.#req = req;
    this.#limit = limit;
    this.#hold = hold;
    this.#onDrop = onDrop;
    req.on('data', this.#onData);
    req.once('end', this.#onEnd);
    req.once('close', this.#onClose);
    // A client abort reaches the engine as this stream's error and the request's abort signal;
    // no consumer may be attached at that moment (a renewal in progress).
    this.on('error', ignore);
  }

  /**
   * The whole body once the client has sent it, or undefined when it cannot be replayed (copy
   * given up, client gone). Stops feeding the current consumer: call it only once the upstream
   * exchange that read the body is over (answered or failed).
   */
  captured(): Promise<Buffer | undefined> {
    // The exchange that read the body is over: the client's remaining bytes go to the copy, or
    // are read and discarded so that the client can finish sending and read its answer.
    this.#detach();
    if (!this.#chunks || this.#aborted) return Promise.resolve(undefined);
    if (this.#ended) return Promise.resolve(this.#whole());
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Gives the copy back to the budget; later chunks are no longer copied. Idempotent. */
  release(): void {
    if (!this.#chunks) return;
    this.#hold!.close();
    this.#chunks = undefined;
    this.#size = 0;
    this.#settle(undefined);
  }

  override _read(): void {
    if (!this.#ended) this.#req.resume();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    // The engine gave up on this upload (failed exchange, or the service answered before reading
    // it all). The client's connection is not destroyed with it: its answer may still be on its
    // way, and the client's remaining bytes are read (into the copy, or discarded as nginx does)
    // so that it can finish sending and read that answer.
    this.#detach();
    callback(err);
  }

  #detach(): void {
    if (this.#detached) return;
    this.#detached = true;
    if (!this.#ended) this.#req.resume();
  }

  readonly #onData = (chunk: Buffer): void => {
    this.pace?.progress(chunk.length);
    if (this.#chunks) this.#capture(chunk);
    if (this.#detached) return;
    if (!this.push(chunk)) this.#req.pause();
    this.onProgress?.();
  };

  #capture(chunk: Buffer): void {
    const size = this.#size + chunk.length;
    if (size > this.#limit) return this.#drop('request_limit');
    const refused = this.#hold!.take(chunk.length);
    if (refused) return this.#drop(refused);
    this.#chunks!.push(chunk);
    this.#size = size;
  }

  #drop(reason: CaptureDropReason): void {
    this.release();
    this.#onDrop(reason);
  }

  readonly #onEnd = (): void => {
    this.#ended = true;
    this.pace?.done();
    if (!this.#detached) {
      this.push(null);
      this.onProgress?.();
    }
    // Joined only for a replay that waits for it: most bodies are never sent twice.
    if (this.#chunks && this.#waiters.length > 0) this.#settle(this.#whole());
  };

  readonly #onClose = (): void => {
    this.#req.off('data', this.#onData);
    this.pace?.done();
    if (this.#ended) return;
    // The client went away mid-upload: the body can neither be completed nor replayed.
    this.#aborted = true;
    this.release();
    if (!this.#detached) this.destroy(clientAborted());
  };

  #whole(): Buffer {
    const chunks = this.#chunks!;
    if (chunks.length !== 1) {
      const whole = Buffer.concat(chunks, this.#size);
      this.#chunks = [whole];
    }
    return this.#chunks![0] ?? Buffer.alloc(0);
  }

  #settle(body: Buffer | undefined): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const resolve of waiters) resolve(body);
  }
}
