/**
 * How many request bodies one source may stream upstream at once, per route (docs/traps.md T36).
 * A streamed body holds a pooled service connection for as long as its upload lasts; without a
 * bound, one source with `proxy.maxSockets` slow uploads holds them all and every other request
 * waits. Past its share, a source's next stream waits here, unread (its client is held back by
 * TCP), until one of its own streams ends; requests without a streamed body never wait here.
 * A source that goes away while waiting leaves the queue.
 */
export class UploadShare {
  readonly #perSource: number;
  readonly #sources = new Map<string, SourceStreams>();

  /** `perSource`: most streams of one source (and route) at once, at least 1. */
  constructor(perSource: number) {
    this.#perSource = Math.max(1, perSource);
  }

  get perSource(): number {
    return this.#perSource;
  }

  /**
   * Runs `start` at once when `key` (route and source) is under its share, else once one of its
   * streams ends. The returned slot must be ended exactly when the stream stops holding an
   * upstream connection for its upload (body complete, exchange over, or client gone), whether
   * `start` ran or not.
   */
  take(key: string, start: () => void): UploadSlot {
    let streams = this.#sources.get(key);
    if (!streams) {
      streams = { active: 0, waiting: [] };
      this.#sources.set(key, streams);
    }
    const slot = new UploadSlot(this, key, start);
    if (streams.active < this.#perSource) {
      streams.active++;
      slot.granted = true;
      start();
    } else {
      streams.waiting.push(slot);
    }
    return slot;
  }

  /** Streams in flight and waiting for `key` (for tests and diagnostics). */
  count(key: string): { active: number; waiting: number } {
    const streams = this.#sources.get(key);
    return { active: streams?.active ?? 0, waiting: streams?.waiting.length ?? 0 };
  }

  /** @internal by UploadSlot.end */
  release(slot: UploadSlot): void {
    const streams = this.#sources.get(slot.key);
    if (!streams) return;
    if (!slot.granted) {
      const i = streams.waiting.indexOf(slot);
      if (i >= 0) streams.waiting.splice(i, 1);
    } else {
      streams.active--;
      const next = streams.waiting.shift();
      if (next) {
        streams.active++;
        next.granted = true;
        next.start();
      }
    }
    if (streams.active === 0 && streams.waiting.length === 0) this.#sources.delete(slot.key);
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
}
