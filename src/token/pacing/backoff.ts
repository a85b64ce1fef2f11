/**
 * Exponential backoff. Two kinds of jitter:
 * - full ("Exponential Backoff And Jitter", AWS Architecture Blog) plus a floor: attempt n waits a
 *   uniform random time in [0, min(cap, base·2ⁿ)], but never less than `minMs`, so an unlucky
 *   draw can never turn retries into a tight loop;
 * - upward only (`upwardJitter` set): attempt n waits min(cap, base·2ⁿ) plus up to that fraction
 *   more, never less: the schedule after a refused login, where sooner is what locks a key out.
 */
export interface BackoffPolicy {
  /** Upper bound of the first delay, in milliseconds. */
  baseMs: number;
  /** Upper bound of every delay, in milliseconds. */
  capMs: number;
  /** Lower bound of every delay, in milliseconds. */
  minMs: number;
  /** When set: no full jitter; each delay is its ceiling plus up to this fraction of it (e.g. 0.2). */
  upwardJitter?: number;
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

/**
 * gentoken answered 401 or 403 (or 429 without Retry-After): the credentials or the source address
 * are refused, and vendors lock a key after a few failed logins in a short time. 5 s, 10 s, 20 s,
 * 40 s, 80 s, 160 s, then every 5 min, each up to 20 % later, never sooner: at most 3 attempts in
 * the first 30 s (at 0, 5 and 15 s), at most 17 in any hour (13 once at the ceiling). docs/troubleshooting.md
 * states this schedule.
 */
export const UNAUTHORIZED_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 5_000, capMs: 300_000, minMs: 5_000, upwardJitter: 0.2 });

/**
 * Network, TLS, timeout, 5xx or a garbled answer: likely to pass, retry sooner: 1 s, then full
 * jitter under 2 s, 4 s … 60 s, never sooner than 1 s (docs/troubleshooting.md says "1 s … 60 s";
 * a faster first retry only adds load to an auth server that is already failing).
 */
export const TRANSIENT_BACKOFF: BackoffPolicy = Object.freeze({ baseMs: 1_000, capMs: 60_000, minMs: 1_000 });

/** Beyond this many doublings every ceiling is the cap anyway; stops 2ⁿ from overflowing. */
const MAX_EXPONENT = 40;

/** The longest delay `policy` ever hands out, in milliseconds. */
export function longestDelayMs(policy: BackoffPolicy): number {
  return policy.capMs * (1 + (policy.upwardJitter ?? 0));
}

/** Creates a backoff schedule for `policy`. */
export function createBackoff({ baseMs, capMs, minMs, upwardJitter, random = Math.random }: BackoffOptions): Backoff {
  if (!(baseMs > 0 && capMs >= baseMs && minMs >= 0 && minMs <= capMs)) {
    throw new RangeError('backoff needs 0 < baseMs <= capMs and 0 <= minMs <= capMs');
  }
  if (upwardJitter !== undefined && !(upwardJitter >= 0 && upwardJitter <= 1)) throw new RangeError('upwardJitter must be within [0, 1]');
  let attempts = 0;
  return {
    next() {
      const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempts, MAX_EXPONENT));
      attempts++;
      // Clamp the draw: a misbehaving random source must not yield a negative or huge delay.
      const r = Math.min(Math.max(random(), 0), 1);
      if (upwardJitter !== undefined) return Math.max(minMs, Math.floor(ceiling * (1 + r * upwardJitter)));
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
