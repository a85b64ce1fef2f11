import { createBackoff, longestDelayMs, TRANSIENT_BACKOFF, UNAUTHORIZED_BACKOFF, type Backoff } from './backoff.js';
import { createGentokenBudget, type GentokenBudget } from './gentoken-budget.js';
import type { GentokenCause } from '../../observability/metrics.js';

/** What asked for a gentoken call. */
export type PacedTrigger = 'start' | 'renewal' | 'retry' | 'upstream 401' | 'rotation';

export interface PacerOptions {
  /** `token.maxGentokenPerMinute`; undefined = no budget (tests only). */
  maxGentokenPerMinute?: number;
  /** `token.maxRetryAfterSeconds`: the longest Retry-After honoured. */
  maxRetryAfterSeconds: number;
  /** Uniform in [0, 1], for the backoff jitter. */
  random: () => number;
}

/** Failures retried on the lockout-safe schedule: asking again soon cannot change the answer and may lock the key out. */
const SLOW_CAUSES: ReadonlySet<GentokenCause> = new Set(['unauthorized', 'refused']);

/**
 * Whether a failure is retried on the lockout-safe schedule: refused credentials or source
 * address, a 429 without Retry-After, or a `configuration` failure (the client certificate
 * refused or missing) that no retry can change.
 */
export function retriedSlowly(cause: GentokenCause, retryAfterMs: number | undefined, configuration = false): boolean {
  return SLOW_CAUSES.has(cause) || configuration || (cause === 'rate_limited' && retryAfterMs === undefined);
}

/**
 * When the next gentoken call may go out, the renewal loop's pace: the per-minute budget (for the
 * calls answers and retries ask for, never the renewals a token's lifetime requires), a
 * Retry-After (binding every call), and the retry schedules after a failure (lockout-safe after a
 * refusal, transient otherwise). No timers: time comes from the caller (monotonic ms); the token
 * manager arms its one timer for what this says.
 */
export class GentokenPacer {
  readonly #budget: GentokenBudget | undefined;
  readonly #slow: Backoff;
  readonly #fast: Backoff;
  readonly #maxRetryAfterMs: number;
  /** Calls of the budget judgements leave to everything else: half of it, rounded up. */
  readonly #judgementReserve: number;
  #notBefore = -Infinity;

  constructor(options: PacerOptions) {
    this.#budget = options.maxGentokenPerMinute !== undefined ? createGentokenBudget(options.maxGentokenPerMinute) : undefined;
    this.#judgementReserve = Math.ceil((options.maxGentokenPerMinute ?? 0) / 2);
    this.#slow = createBackoff({ ...UNAUTHORIZED_BACKOFF, random: options.random });
    this.#fast = createBackoff({ ...TRANSIENT_BACKOFF, random: options.random });
    this.#maxRetryAfterMs = options.maxRetryAfterSeconds * 1000;
  }

  /** Monotonic ms before which no call goes out (a Retry-After); -Infinity when none. */
  get notBefore(): number {
    return this.#notBefore;
  }

  /** The longest Retry-After honoured, in ms. */
  get maxRetryAfterMs(): number {
    return this.#maxRetryAfterMs;
  }

  /**
   * The earliest monotonic time a call for `trigger` may go out (≤ `now`: at once), and what holds
   * it. A scheduled renewal is never held by the budget, nor a rotation still waiting once the
   * renewal falls due at `renewDueAt` (it stands in for the renewal).
   */
  earliest(trigger: PacedTrigger, now: number, renewDueAt: number): { at: number; by: 'token.maxGentokenPerMinute' | 'Retry-After' | undefined } {
    const budgetWait = lifetimeDriven(trigger, now, renewDueAt) ? 0 : this.#budget?.waitMs(now) ?? 0;
    const at = Math.max(this.#notBefore, now + budgetWait);
    if (at <= now) return { at, by: undefined };
    return { at, by: budgetWait > 0 && now + budgetWait >= this.#notBefore ? 'token.maxGentokenPerMinute' : 'Retry-After' };
  }

  /**
   * True when a judgement's call (a 401 on a key never seen to work, answer-rules.ts) may go out at
   * `now`: it is counted like any 401's, and may go only while it leaves at least half of the
   * budget (rounded up) for the revocations and retries that need it (with a budget of 1, never).
   */
  judgementAllowed(now: number): boolean {
    if (this.#budget === undefined) return true;
    return this.#budget.remaining(now) - 1 >= this.#judgementReserve;
  }

  /** Counts a call going out at `now` (a lifetime-driven one is not counted). */
  take(trigger: PacedTrigger, now: number, renewDueAt: number): void {
    if (!lifetimeDriven(trigger, now, renewDueAt)) this.#budget?.take(now);
  }

  /**
   * A call failed with `cause` (and a Retry-After of `retryAfterMs`, already capped, if any): the
   * Retry-After now binds every call; returns the delay before the retry. A 429 without a
   * Retry-After is told to slow down too, and a `configuration` failure cannot pass by itself:
   * the lockout-safe schedule.
   */
  failed(cause: GentokenCause, retryAfterMs: number | undefined, now: number, configuration = false): number {
    if (retryAfterMs !== undefined) this.#notBefore = Math.max(this.#notBefore, now + retryAfterMs);
    const slow = retriedSlowly(cause, retryAfterMs, configuration);
    return Math.max((slow ? this.#slow : this.#fast).next(), retryAfterMs ?? 0);
  }

  /** A call succeeded: the retry schedules start over. */
  succeeded(): void {
    this.#slow.reset();
    this.#fast.reset();
  }

  /** The furthest ahead a retry or a Retry-After ever schedules a call, in ms. */
  longestWaitMs(): number {
    return Math.max(longestDelayMs(UNAUTHORIZED_BACKOFF), longestDelayMs(TRANSIENT_BACKOFF), this.#maxRetryAfterMs);
  }
}

function lifetimeDriven(trigger: PacedTrigger, now: number, renewDueAt: number): boolean {
  return trigger === 'renewal' || (trigger === 'rotation' && now >= renewDueAt);
}
