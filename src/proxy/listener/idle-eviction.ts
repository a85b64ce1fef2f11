import type { Socket } from 'node:net';

/**
 * A listener's connection cap that idle connections cannot hold: when it is reached, a new
 * connection is let in by closing the connection that has been idle longest (no request being
 * answered: not yet sent a complete request head, or kept alive after its last answer), as nginx
 * reuses idle keep-alive connections when its `worker_connections` run out. Only a listener full
 * of requests actually being answered refuses a newcomer. The admin listener uses it: a probe
 * sends its request at once and is answered, however many idle connections other local processes
 * keep opening (docs/security.md, "The admin listener cannot be held by idle connections").
 *
 * Closing an idle connection is what its keep-alive timeout would have done a little later; a
 * connection still sending its head is closed without an answer, as a full listener does.
 */
export class IdleEviction {
  readonly #cap: number;
  /** Counted connections with no request being answered, longest idle first (a Set keeps insertion order). */
  readonly #idle = new Set<Socket>();
  readonly #counted = new Set<Socket>();
  #evicted = 0;

  /** `cap`: most connections at once, at least 1. */
  constructor(cap: number) {
    this.#cap = Math.max(1, cap);
  }

  /** Connections closed to make room so far (tests and diagnostics). */
  get evicted(): number {
    return this.#evicted;
  }

  /** Counts `socket` in, closing the longest-idle connection if the cap is reached; false when every counted connection is busy. */
  admit(socket: Socket): boolean {
    if (this.#counted.size >= this.#cap) {
      const oldest = this.#idle.values().next().value;
      if (!oldest) return false;
      this.#forget(oldest);
      this.#evicted++;
      oldest.destroy();
    }
    this.#counted.add(socket);
    this.#idle.add(socket);
    socket.once('close', () => this.#forget(socket));
    return true;
  }

  /** A request on `socket` is being answered: not evictable until `idle`. */
  busy(socket: Socket): void {
    this.#idle.delete(socket);
  }

  /** `socket`'s answer is over: evictable again, as the most recently idle. */
  idle(socket: Socket): void {
    if (!this.#counted.has(socket) || socket.destroyed) return;
    this.#idle.delete(socket);
    this.#idle.add(socket);
  }

  #forget(socket: Socket): void {
    this.#counted.delete(socket);
    this.#idle.delete(socket);
  }
}
