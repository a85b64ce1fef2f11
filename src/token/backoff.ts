/**
 * Exponential backoff with full jitter ("Exponential Backoff And Jitter", AWS Architecture Blog)
 * plus a floor: attempt n waits a uniform random time in [0, min(cap, base·2ⁿ)], but never less
 * than `minMs`, so an unlucky draw can never turn retries into a tight loop.
 */
export interface BackoffPolicy {
  /** Upper bound of the first delay, in milliseconds. */
  baseMs: number;
  /** Upper bound of every delay, in milliseconds. */
  capMs: number;
  /** Lower bound of every delay, in milliseconds. */
  minMs: number;
}

/** Options of {@link createBackoff}: a policy and the random source (injected for tests). */
export interface BackoffOptions extends BackoffPolicy {
  /** Uniform random number in [0, 1); defaults to `Math.random`. */
  random?: () => number;
}

/** A retry schedule; one per failure class. */
export interface Backoff {
  /** Delay before the next attempt, in milliseconds; counts the attempt. */
  next(): number;
  /** Starts over after a success. */
  reset(): void;
  /** Delays handed out since the last reset. */
  readonly attempts: number;
}

/** gentoken answered 401: credentials are wrong, retrying fast only hammers the auth server. */
export const UNAUTHORIZED_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 5_000, capMs: 300_000, minMs: 1_000 });

/** Network, TLS, timeout, 5xx or a garbled answer: likely to pass, retry sooner. */
export const TRANSIENT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 1_000, capMs: 60_000, minMs: 250 });

/** Beyond this many doublings every ceiling is the cap anyway; stops 2ⁿ from overflowing. */
const MAX_EXPONENT = 40;

/** Creates a backoff schedule for `policy`. */
export function createBackoff({ baseMs, capMs, minMs, random = Math.random }: BackoffOptions): Backoff {
  if (!(baseMs > 0 && capMs >= baseMs && minMs >= 0 && minMs <= capMs)) {
    throw new RangeError('backoff needs 0 < baseMs <= capMs and 0 <= minMs <= capMs');
  }
  let attempts = 0;
  return {
    next() {
      const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempts, MAX_EXPONENT));
      attempts++;
      // Clamp the draw: a misbehaving random source must not yield a negative or huge delay.
      const r = Math.min(Math.max(random(), 0), 1);
      return Math.max(minMs, Math.floor(r * ceiling));
    },
    reset() {
      attempts = 0;
    },
    get attempts() {
      return attempts;
    },
  };
}
