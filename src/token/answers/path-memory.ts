/**
 * A small bounded memory of request keys with an expiry, for the answer rules (answer-rules.ts):
 * the keys whose 401 is the endpoint's own answer, and the keys that have worked. Keys are what the
 * caller makes them (request-key.ts: method, path, normalised query). The least recently set entry
 * goes first when full (setting again moves an entry to the end); an entry lives `ttlMs` from when
 * it was last set. Time comes from the caller (monotonic ms).
 */
export const MAX_PATH_KEY = 256;

/** A request path without its query, cut to {@link MAX_PATH_KEY} characters: what the attach-suspect evidence counts distinct paths by. */
export function pathKey(path: string): string {
  const q = path.indexOf('?');
  const bare = q === -1 ? path : path.slice(0, q);
  return bare.length > MAX_PATH_KEY ? bare.slice(0, MAX_PATH_KEY) : bare;
}

export class PathMemory<V> {
  /** In order of setting, so the first entry is the oldest and expires first. */
  readonly #entries = new Map<string, { value: V; until: number }>();

  constructor(readonly capacity: number, readonly ttlMs: number) {
    if (!(Number.isInteger(capacity) && capacity >= 1 && ttlMs > 0)) throw new RangeError('PathMemory needs capacity >= 1 and ttlMs > 0');
  }

  /** Entries held, expired ones included until they are pruned. */
  get size(): number {
    return this.#entries.size;
  }

  get(key: string, now: number): V | undefined {
    const e = this.#entries.get(key);
    if (e === undefined) return undefined;
    if (e.until <= now) {
      this.#entries.delete(key);
      return undefined;
    }
    return e.value;
  }

  /** Sets (or renews) `key` for ttlMs from `now`, evicting the oldest entry when full. */
  set(key: string, value: V, now: number): void {
    this.prune(now);
    this.#entries.delete(key);
    if (this.#entries.size >= this.capacity) this.#entries.delete(this.#entries.keys().next().value!);
    this.#entries.set(key, { value, until: now + this.ttlMs });
  }

  delete(key: string): boolean {
    return this.#entries.delete(key);
  }

  /** Drops expired entries (they sit at the front). */
  prune(now: number): void {
    for (const [key, e] of this.#entries) {
      if (e.until > now) return;
      this.#entries.delete(key);
    }
  }

  clear(): void {
    this.#entries.clear();
  }
}
