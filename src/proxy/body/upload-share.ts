/**
 * How many request bodies may stream upstream at once, per route (docs/traps.md T36 and T69,
 * docs/design.md "Request bodies"). A streamed body holds a pooled service connection for as long as its upload
 * lasts, so two bounds apply:
 *
 * - per source (`perSource`, `proxy.streamedUploadShare` of `proxy.maxSockets`): one address's
 *   slow uploads cannot hold the pool;
 * - all sources together (`total`, 3/4 of `proxy.maxSockets`): the rest of the pool is kept for
 *   requests whose body is complete (none, or received whole), so that several addresses of one
 *   process (127.0.0.1 … 127.0.0.4 under `guard.allow: 127.0.0.0/8`) cannot take it all either.
 *
 * Each client connection streams at most one body at a time (a connection's requests are handled
 * in order: connection-order.ts), which is the per-connection cap. Past either bound a stream
 * waits here, unread (its client is held back by TCP); freed slots go to waiting sources in turn
 * (round robin), so one source's long queue does not keep another's out. Requests without a
 * streamed body never wait here. A source that goes away while waiting leaves the queue.
 */
export class UploadShare {
  readonly #perSource: number;
  readonly #total: number;
  readonly #sources = new Map<string, SourceStreams>();
  readonly #pools = new Map<string, Pool>();

  /**
   * `perSource`: most streams of one source (and route) at once; `total`: most streams of all
   * sources on one route at once (unbounded when absent); each at least 1.
   */
  constructor(perSource: number, total = Number.MAX_SAFE_INTEGER) {
    this.#perSource = Math.max(1, perSource);
    this.#total = Math.max(1, total);
  }

  get perSource(): number {
    return this.#perSource;
  }

  get total(): number {
    return this.#total;
  }

  /**
   * Runs `start` at once when `key` (route and source) is under its share and its route `pool`
   * under the total, else once a slot frees. The returned slot must be ended exactly when the
   * stream stops holding an upstream connection for its upload (body complete, exchange over, or
   * client gone), whether `start` ran or not.
   */
  take(key: string, start: () => void, pool = ''): UploadSlot {
    let streams = this.#sources.get(key);
    if (!streams) {
      let shared = this.#pools.get(pool);
      if (!shared) {
        shared = { active: 0, waiting: 0, queued: new Set() };
        this.#pools.set(pool, shared);
      }
      streams = { active: 0, waiting: [], pool: shared };
      this.#sources.set(key, streams);
    }
    const slot = new UploadSlot(this, key, start);
    if (streams.active < this.#perSource && streams.pool.active < this.#total) {
      this.#grant(streams, slot);
    } else {
      streams.waiting.push(slot);
      streams.pool.waiting++;
      streams.pool.queued.add(key);
    }
    return slot;
  }

  /** Streams in flight and waiting for `key` (for tests and diagnostics). */
  count(key: string): { active: number; waiting: number } {
    const streams = this.#sources.get(key);
    return { active: streams?.active ?? 0, waiting: streams?.waiting.length ?? 0 };
  }

  /** Streams in flight and waiting on every route (the `b2b_sidecar_streamed_uploads` gauge). */
  totals(): { active: number; waiting: number } {
    let active = 0;
    let waiting = 0;
    for (const pool of this.#pools.values()) {
      active += pool.active;
      waiting += pool.waiting;
    }
    return { active, waiting };
  }

  /** @internal by UploadSlot.end */
  release(slot: UploadSlot): void {
    const streams = this.#sources.get(slot.key);
    if (!streams) return;
    const pool = streams.pool;
    if (!slot.granted) {
      const i = streams.waiting.indexOf(slot);
      if (i >= 0) {
        streams.waiting.splice(i, 1);
        pool.waiting--;
        if (streams.waiting.length === 0) pool.queued.delete(slot.key);
      }
    } else {
      streams.active--;
      pool.active--;
      this.#next(pool);
    }
    this.#forgetIdle(slot.key, streams);
  }

  /** Hands a freed slot of `pool` to the first waiting source, in turn, that is under its share. */
  #next(pool: Pool): void {
    if (pool.active >= this.#total) return;
    for (const key of pool.queued) {
      const streams = this.#sources.get(key)!;
      if (streams.active >= this.#perSource) continue;
      const next = streams.waiting.shift()!;
      pool.waiting--;
      // To the back of the turn: the next freed slot goes to another waiting source first.
      pool.queued.delete(key);
      if (streams.waiting.length > 0) pool.queued.add(key);
      this.#grant(streams, next);
      return;
    }
  }

  #grant(streams: SourceStreams, slot: UploadSlot): void {
    streams.active++;
    streams.pool.active++;
    slot.granted = true;
    slot.start();
  }

  #forgetIdle(key: string, streams: SourceStreams): void {
    if (streams.active === 0 && streams.waiting.length === 0) this.#sources.delete(key);
  }
}

export class UploadSlot {
  granted = false;
  #ended = false;
  constructor(readonly share: UploadShare, readonly key: string, readonly start: () => void) {}

  /** Frees the slot (or leaves the queue). Idempotent. */
  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.share.release(this);
  }
}

interface SourceStreams {
  active: number;
  waiting: UploadSlot[];
  pool: Pool;
}

/** One route's streams: in flight, waiting, and the sources waiting, in turn order. */
interface Pool {
  active: number;
  waiting: number;
  queued: Set<string>;
}
