import type { Logger } from '../observability/logger.js';

/** A reset after less idle time than this is not an idle timeout (e.g. a per-connection request cap). */
const MIN_LEARNED_IDLE_MS = 200;
/** Pooled connections are closed this fraction of the observed idle age in: a quarter as margin. */
const MARGIN_FACTOR = 0.75;

/**
 * Learns the service's keep-alive idle timeout from its resets. Integrators rarely know
 * it (no API document states it, gateways change it), and when `proxy.keepAliveTimeoutMs` is above
 * it, every request that reuses a connection idle for longer races the service closing it. Each
 * such reset of a reused connection after `idleMs` of idleness shrinks the pool's idle timeout
 * below that age, so the race stops happening instead of being retried every time. It only ever
 * shrinks, never below MIN_LEARNED_IDLE_MS × MARGIN_FACTOR. `Keep-Alive: timeout=N` hints are
 * honoured by both engines' own pools (undici's keepAliveTimeoutThreshold, Node's agent).
 */
export class KeepAliveLearner {
  #timeoutMs: number;
  #announced = false;
  readonly #logger: Logger | undefined;
  readonly #apply: (timeoutMs: number) => void;

  constructor(configuredMs: number, apply: (timeoutMs: number) => void, logger?: Logger) {
    this.#timeoutMs = configuredMs;
    this.#apply = apply;
    this.#logger = logger;
  }

  /** The idle timeout pooled connections get now, ms. */
  get timeoutMs(): number {
    return this.#timeoutMs;
  }

  /** A connection that had been idle for `idleMs` was closed by the service under a new request. */
  staleAfterIdle(idleMs: number): void {
    if (!(idleMs >= MIN_LEARNED_IDLE_MS)) return;
    const learned = Math.floor(idleMs * MARGIN_FACTOR);
    if (learned >= this.#timeoutMs) return;
    const previous = this.#timeoutMs;
    this.#timeoutMs = learned;
    this.#apply(learned);
    const fields = { previousMs: previous, timeoutMs: learned, observedIdleMs: Math.round(idleMs) };
    const message = 'the service closes idle connections sooner than proxy.keepAliveTimeoutMs; idle upstream connections are now closed sooner';
    // Once at info (an operator may want to set the key); every later adjustment at debug.
    if (this.#announced) this.#logger?.debug(message, fields);
    else this.#logger?.info(message, fields);
    this.#announced = true;
  }
}
