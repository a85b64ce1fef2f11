/**
 * How the next gentoken requests fail: an HTTP status with an ErrorMessage body, `garbage`
 * (200 whose body is not an AuthResult), `reset` (socket destroyed) or `hang` (never answered).
 */
export type TokenFaultKind = 500 | 503 | 401 | 'garbage' | 'reset' | 'hang';
/** Which requests an added latency applies to. */
export type LatencyScope = 'token' | 'api' | 'all';

export const TOKEN_FAULT_KINDS: readonly TokenFaultKind[] = [500, 503, 401, 'garbage', 'reset', 'hang'];
export const LATENCY_SCOPES: readonly LatencyScope[] = ['token', 'api', 'all'];

/** Parses a fault kind as the control API receives it (`500` or `"500"`). */
export function parseFaultKind(value: unknown): TokenFaultKind | undefined {
  const normalized = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return TOKEN_FAULT_KINDS.find((k) => k === normalized);
}

/**
 * Fault injection for integrators' tests. Methods take effect for requests that arrive
 * afterwards; `revokeAll` and `setTtl` act on the simulator's token state.
 */
export class SimulatorFaults {
  #pending: { remaining: number; kind: TokenFaultKind } | undefined;
  #latency = { token: 0, api: 0 };
  #ttlSeconds: number;
  readonly #revoke: () => void;

  constructor(ttlSeconds: number, revoke: () => void) {
    this.#ttlSeconds = ttlSeconds;
    this.#revoke = revoke;
  }

  /** The next `n` gentoken requests fail as `kind` (replaces any earlier pending fault). */
  failNextTokenRequests(n: number, kind: TokenFaultKind): void {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`n must be a non-negative integer, got ${n}`);
    if (!TOKEN_FAULT_KINDS.includes(kind)) throw new RangeError(`unknown fault kind ${String(kind)}`);
    this.#pending = n > 0 ? { remaining: n, kind } : undefined;
  }

  /** Delays each answer in `scope` by `ms` real milliseconds (0 removes it). */
  setLatency(ms: number, scope: LatencyScope = 'all'): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`ms must be a non-negative number, got ${ms}`);
    if (!LATENCY_SCOPES.includes(scope)) throw new RangeError(`unknown latency scope ${String(scope)}`);
    if (scope !== 'api') this.#latency.token = ms;
    if (scope !== 'token') this.#latency.api = ms;
  }

  /** Every token issued so far becomes invalid: protected operations answer 401 to it. */
  revokeAll(): void {
    this.#revoke();
  }

  /** `aliveSecondsTtl` (and real lifetime) of tokens issued from now on. */
  setTtl(seconds: number): void {
    if (!Number.isSafeInteger(seconds) || seconds < 0) throw new RangeError(`ttl must be a non-negative integer, got ${seconds}`);
    this.#ttlSeconds = seconds;
  }

  /** Removes pending token faults and latency (the TTL and revocations stay). */
  clear(): void {
    this.#pending = undefined;
    this.#latency = { token: 0, api: 0 };
  }

  get ttlSeconds(): number {
    return this.#ttlSeconds;
  }

  /** Latency in ms for a request of `kind`. */
  latency(kind: 'token' | 'api'): number {
    return this.#latency[kind];
  }

  /** Consumes one pending token fault, if any. */
  takeTokenFault(): TokenFaultKind | undefined {
    const pending = this.#pending;
    if (!pending) return undefined;
    if (--pending.remaining <= 0) this.#pending = undefined;
    return pending.kind;
  }

  /** A JSON view for the control API. */
  describe(): object {
    return {
      pendingTokenFaults: this.#pending ? { ...this.#pending } : null,
      latencyMs: { ...this.#latency },
      ttlSeconds: this.#ttlSeconds,
    };
  }
}
