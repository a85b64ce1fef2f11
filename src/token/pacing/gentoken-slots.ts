import { TokenUnavailableError } from '../../shared/errors.js';

/** Gives a slot back; calling it again does nothing. */
export type ReleaseSlot = () => void;

/**
 * `token.maxConcurrentGentoken`'s default. With 1,000 credential sets started at once and gentoken
 * answering in 20 ms, 8 calls at a time fetch every first token in 1,000 × 20 ms / 8 = 2.5 s, well
 * within 30 s even if the service answers ten times slower (240 ms); the service never sees more
 * than 8 gentoken calls at once (what 8 ordinary clients would send), and since a slot frees only
 * when its answer arrives, a slower service is sent fewer calls per second, never a burst. 1 or 2
 * leave no room for a slow service (1 slot at 40 ms: 40 s); 64 would send 3,200 calls a second.
 */
export const DEFAULT_MAX_CONCURRENT_GENTOKEN = 8;

interface Waiter {
  grant: (release: ReleaseSlot) => void;
  /** Set when the waiter gave up (its signal aborted): skipped when its turn comes. */
  gone: boolean;
}

/**
 * A bounded-concurrency gate shared by the token managers of many credential sets: at most
 * `limit` gentoken calls on the wire at once, the others wait in arrival order (FIFO: a set never
 * waits behind sets that asked after it). No timers: a slot is handed straight from the call that
 * ends to the next waiter. One set alone never waits: `tryEnter` takes a free slot synchronously.
 */
export class GentokenSlots {
  readonly limit: number;
  #busy = 0;
  /** Waiters from `#head` on; the consumed front is dropped now and then, not shifted per grant. */
  #queue: Waiter[] = [];
  #head = 0;

  constructor(limit = DEFAULT_MAX_CONCURRENT_GENTOKEN) {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError('limit must be an integer >= 1');
    this.limit = limit;
  }

  /** Calls on the wire now. */
  get active(): number {
    return this.#busy;
  }

  /** Calls waiting for a slot now. */
  get waiting(): number {
    let n = 0;
    for (let i = this.#head; i < this.#queue.length; i++) if (!this.#queue[i]!.gone) n++;
    return n;
  }

  /** The fast path: a slot now if one is free and nobody waits for one; else undefined. */
  tryEnter(): ReleaseSlot | undefined {
    if (this.#busy >= this.limit || this.#head < this.#queue.length) return undefined;
    this.#busy++;
    return this.#releaser();
  }

  /** Resolves with a slot's release when this caller's turn comes; rejects if `signal` aborts first. */
  enter(signal?: AbortSignal): Promise<ReleaseSlot> {
    const now = this.tryEnter();
    if (now) return Promise.resolve(now);
    if (signal?.aborted) return Promise.reject(stopped(signal));
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { grant: resolve, gone: false };
      this.#queue.push(waiter);
      signal?.addEventListener('abort', () => {
        if (waiter.gone) return;
        waiter.gone = true;
        reject(stopped(signal));
      }, { once: true });
    });
  }

  /** Runs `fn` in a slot, released however `fn` ends. */
  async run<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.enter(signal);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  #releaser(): ReleaseSlot {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#handOver();
    };
  }

  /** A slot came free: it goes to the oldest waiter still waiting, else back to the pool. */
  #handOver(): void {
    while (this.#head < this.#queue.length) {
      const next = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as unknown as Waiter; // let it be collected
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue = this.#queue.slice(this.#head);
        this.#head = 0;
      }
      if (next.gone) continue;
      next.gone = true; // its signal may still abort: nothing to undo then
      next.grant(this.#releaser());
      return;
    }
    this.#busy--;
  }
}

function stopped(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new TokenUnavailableError('the token manager was stopped');
}
