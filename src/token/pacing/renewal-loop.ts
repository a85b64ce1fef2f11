import type { Logger } from '../../observability/logger.js';
import type { Clock } from '../../shared/clock.js';
import { TokenUnavailableError } from '../../shared/errors.js';
import type { GentokenCause, GentokenTrigger } from '../../observability/metrics.js';
import { GentokenPacer, type PacedTrigger } from './gentoken-pacer.js';
import { LoopTimer } from './loop-timer.js';
import type { GentokenSlots, ReleaseSlot } from './gentoken-slots.js';

/** Renewal moves earlier by up to 10 % of its delay so a fleet does not renew in lock-step. */
const JITTER_FRACTION = 0.1;
/** Even when a response arrives after its renewal time, do not renew back to back. */
export const MIN_RENEW_DELAY_MS = 250;
/**
 * Timers fire late when the event loop is busy; a scheduled attempt (or a request past its own
 * deadline) later than this means the loop is dead or stuck, not merely slow.
 */
const LIVENESS_GRACE_MS = 60_000;
const LIVE = Object.freeze({ live: true });

export interface RenewalLoopOptions {
  renewAt: number;
  maxLifetimeSeconds: number;
  tokenTimeoutMs: number;
  maxGentokenPerMinute?: number;
  maxRetryAfterSeconds: number;
  startJitterSeconds?: number;
  /**
   * The first token's renewal is drawn from its whole delay, not only its last 10 % (one of many
   * credential sets: docs/design.md, "Many credential sets: gentoken slots and the renewal spread"). Off: every renewal as documented.
   */
  spreadFirstRenewal?: boolean;
}

export interface RenewalLoopDeps {
  clock: Clock;
  logger: Logger;
  /** Uniform in [0, 1]. */
  random: () => number;
  /** Called once per gentoken call held back by the budget or a Retry-After. */
  onDeferred?: (trigger: GentokenTrigger) => void;
  options: RenewalLoopOptions;
}

/**
 * The renewal loop: when the next gentoken attempt goes (start with its spread, the renewal at
 * `renewAt` of the lifetime with jitter, a retry on its schedule, a call held back by the budget
 * or a Retry-After) and whether the loop itself is alive. Its one timer (loop-timer.ts) is every
 * next attempt; the pace comes from gentoken-pacer.ts. It never calls gentoken itself: its timers
 * call the function it is handed, the token source's single-flight `acquire` (token-source.ts).
 */
export class RenewalLoop {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #random: () => number;
  readonly #options: RenewalLoopOptions;
  readonly #onDeferred: ((trigger: GentokenTrigger) => void) | undefined;
  readonly #pacer: GentokenPacer;
  readonly #timer: LoopTimer;
  /** Monotonic ms the current token's scheduled renewal is due at. */
  #renewDueAt = Infinity;
  /** Monotonic ms a held-back attempt waits for; undefined when no attempt is held back. */
  #gatedUntil: number | undefined;
  /** Wakes an attempt waiting for the budget or a Retry-After when the loop stops. */
  #releaseGate: ((err: Error) => void) | undefined;
  /** True from the first held-back call until a call passes without waiting: one log line per episode. */
  #deferring = false;
  /** Monotonic ms the gentoken request in flight was sent; undefined when none is on the wire. */
  #requestSentAt: number | undefined;
  /** The lifetime note (renewals the budget does not hold back) is logged once. */
  #lifetimeNoted = false;
  /** The next renewal is the first of a set whose first renewal is spread (spreadFirstRenewal). */
  #spreadNext: boolean;
  #stopped = false;
  /** Aborted by stop(): wakes an attempt waiting for a gentoken slot (gentoken-slots.ts). */
  readonly #stopSignal = new AbortController();
  /** True while the attempt waits for a slot shared with other credential sets. */
  #awaitingSlot = false;

  constructor(deps: RenewalLoopDeps) {
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#random = deps.random;
    this.#options = deps.options;
    this.#onDeferred = deps.onDeferred;
    this.#pacer = new GentokenPacer({
      ...(deps.options.maxGentokenPerMinute !== undefined ? { maxGentokenPerMinute: deps.options.maxGentokenPerMinute } : {}),
      maxRetryAfterSeconds: deps.options.maxRetryAfterSeconds,
      random: deps.random,
    });
    this.#timer = new LoopTimer(deps.clock);
    this.#spreadNext = deps.options.spreadFirstRenewal === true;
  }

  /** The first attempt: at once, or after a random spread of up to `startJitterSeconds`. */
  start(kick: () => void): void {
    const jitterMs = (this.#options.startJitterSeconds ?? 0) * 1000;
    // A fleet started at once (a deploy, a node reboot) would otherwise call gentoken in lock-step.
    if (jitterMs > 0) this.#timer.arm(this.#clock.now() + Math.floor(this.#random() * jitterMs), kick);
    else kick();
  }

  /** Cancels the timer and wakes a held-back attempt with an error. Idempotent. */
  stop(): void {
    this.#stopped = true;
    this.#timer.cancel();
    this.#releaseGate?.(new TokenUnavailableError('the token manager was stopped'));
    if (!this.#stopSignal.signal.aborted) this.#stopSignal.abort(new TokenUnavailableError('the token manager was stopped'));
  }

  /**
   * After the gate: a slot among the gentoken calls of every credential set sharing `slots`. A
   * free slot is taken synchronously (one set alone never waits); otherwise the attempt waits its
   * turn, which liveness counts as an attempt under way, not as a stuck loop, and stop() ends.
   */
  slot(slots: GentokenSlots): ReleaseSlot | Promise<ReleaseSlot> {
    if (this.#stopped) throw new TokenUnavailableError('the token manager was stopped');
    const free = slots.tryEnter();
    if (free) return free;
    this.#awaitingSlot = true;
    return slots.enter(this.#stopSignal.signal).finally(() => {
      this.#awaitingSlot = false;
    });
  }

  /** True while the attempt waits for a gentoken slot shared with other credential sets. */
  get awaitingSlot(): boolean {
    return this.#awaitingSlot;
  }

  /** An attempt begins: whatever was scheduled is replaced by it. */
  attemptBegins(): void {
    this.#timer.cancel();
  }

  /** Monotonic ms the current token's scheduled renewal is due at; Infinity before the first token. */
  get renewDueAt(): number {
    return this.#renewDueAt;
  }

  /** Monotonic ms a held-back attempt waits for; undefined when none is held back. */
  get gatedUntil(): number | undefined {
    return this.#gatedUntil;
  }

  /** Monotonic ms before which no call goes out (a Retry-After); -Infinity when none. */
  get notBefore(): number {
    return this.#pacer.notBefore;
  }

  /** The longest Retry-After honoured, in ms. */
  get maxRetryAfterMs(): number {
    return this.#pacer.maxRetryAfterMs;
  }

  /** A gentoken request went on the wire at `at` (monotonic ms), or came back (undefined). */
  set requestSentAt(at: number | undefined) {
    this.#requestSentAt = at;
  }

  /** True when a call for `trigger` may go out at `now`; otherwise counts it as deferred (logged once per episode). */
  mayCallNow(trigger: PacedTrigger, now: number): boolean {
    const { at, by } = this.#pacer.earliest(trigger, now, this.#renewDueAt);
    if (at <= now) return true;
    this.#noteDeferred(trigger, now, at, by);
    return false;
  }

  /**
   * True when a judgement's call may go out at `now`: as a 401's (mayCallNow), and leaving half of
   * the budget for revocations (gentoken-pacer.ts). Not counted as deferred: its 401 simply goes back.
   */
  mayJudgeNow(now: number): boolean {
    return this.#pacer.earliest('upstream 401', now, this.#renewDueAt).at <= now && this.#pacer.judgementAllowed(now);
  }

  /**
   * Waits until a gentoken call is allowed: after any Retry-After, whatever the trigger, and within
   * the per-minute budget unless it is a scheduled renewal. The wait is the loop's one timer, so
   * liveness sees it scheduled.
   */
  async gate(trigger: PacedTrigger): Promise<void> {
    let counted = false;
    for (;;) {
      if (this.#stopped) throw new TokenUnavailableError('the token manager was stopped');
      const now = this.#clock.now();
      const { at, by } = this.#pacer.earliest(trigger, now, this.#renewDueAt);
      if (at <= now) {
        this.#pacer.take(trigger, now, this.#renewDueAt);
        if (!counted) this.#deferring = false;
        return;
      }
      if (!counted) {
        counted = true;
        this.#noteDeferred(trigger, now, at, by);
      }
      this.#gatedUntil = at;
      // A rotation held back wakes when the renewal falls due, and goes out as the renewal.
      const wake = trigger === 'rotation' && this.#renewDueAt > now ? Math.min(at, this.#renewDueAt) : at;
      await new Promise<void>((resolve, reject) => {
        this.#releaseGate = reject;
        this.#timer.arm(wake, resolve);
      }).finally(() => {
        this.#releaseGate = undefined;
        this.#gatedUntil = undefined;
      });
    }
  }

  /**
   * A token sent for at `sentAt` (monotonic ms) arrived with `lifetimeMs`: the retry schedules
   * start over and, unless stopped, its renewal is armed. Returns the seconds to the renewal.
   */
  succeeded(sentAt: number, lifetimeMs: number, renew: () => void): number | undefined {
    this.#pacer.succeeded();
    if (this.#stopped) return undefined;
    const delay = lifetimeMs * this.#options.renewAt;
    const now = this.#clock.now();
    // Sets started together get their first tokens within seconds of each other, and 10 % of a
    // short delay cannot pull their renewals apart for many rounds; drawn from the whole delay, the
    // first renewal puts each set at its own place in the renewal period, once (one early call).
    const fraction = this.#spreadNext ? 1 : JITTER_FRACTION;
    this.#spreadNext = false;
    const at = Math.max(sentAt + delay - this.#random() * fraction * delay, now + MIN_RENEW_DELAY_MS);
    this.#renewDueAt = at;
    this.#timer.arm(at, renew);
    return round((at - now) / 1000);
  }

  /**
   * An attempt failed with `cause` (and a Retry-After of `retryAfterMs`, already capped; a
   * `configuration` failure, see gentoken-pacer.ts): the retry is armed on its schedule (a
   * Retry-After binds every trigger). Returns the seconds to it.
   */
  failed(cause: GentokenCause, retryAfterMs: number | undefined, retry: () => void, configuration = false): number | undefined {
    const now = this.#clock.now();
    const delay = this.#pacer.failed(cause, retryAfterMs, now, configuration);
    if (this.#stopped) return undefined;
    // Even if the current token expires before the retry, keep the backoff: no tight loop.
    this.#timer.arm(now + delay, retry);
    return round(delay / 1000);
  }

  /**
   * Arms `fn` at `at` (monotonic ms) on the loop's one timer, replacing what was armed: the fleet
   * source's next look at the store (a peer's renewal awaited, the store down), so liveness sees
   * an attempt scheduled while no gentoken call is (token/fleet-source.ts).
   */
  armAt(at: number, fn: () => void): void {
    if (this.#stopped) return;
    this.#timer.arm(at, fn);
  }

  /** The loop's `armAt` as a promise; rejects when the loop stops. */
  waitUntil(at: number): Promise<void> {
    if (this.#stopped) return Promise.reject(new TokenUnavailableError('the token manager was stopped'));
    return new Promise<void>((resolve, reject) => {
      this.#releaseGate = reject;
      this.#timer.arm(at, resolve);
    }).finally(() => {
      this.#releaseGate = undefined;
    });
  }

  /** Once: tokens so short-lived that their renewals alone would fill token.maxGentokenPerMinute. */
  noteLifetime(lifetimeSeconds: number): void {
    const perMinute = this.#options.maxGentokenPerMinute;
    if (this.#lifetimeNoted || perMinute === undefined) return;
    const renewalsPerMinute = 60 / Math.max(lifetimeSeconds * this.#options.renewAt, MIN_RENEW_DELAY_MS / 1000);
    if (renewalsPerMinute < perMinute / 2) return;
    this.#lifetimeNoted = true;
    this.#logger.info('tokens live so briefly that their scheduled renewals alone approach token.maxGentokenPerMinute: the budget does not hold scheduled renewals back, only the calls answers and retries ask for', {
      lifetimeSeconds, renewalsPerMinute: round(renewalsPerMinute), maxGentokenPerMinute: perMinute,
    });
  }

  /**
   * Liveness: false only when the loop itself is dead or stuck: no attempt on the wire and none
   * scheduled, a scheduled attempt overdue, a request far past its deadline, or an attempt
   * scheduled further ahead than any setting allows.
   */
  liveness(): { live: boolean; reason?: string } {
    // Waiting behind other sets' calls, each bounded by its own deadline (and judged by its own loop).
    if (this.#awaitingSlot) return LIVE;
    const now = this.#clock.now();
    if (this.#requestSentAt !== undefined) {
      const late = now - this.#requestSentAt - this.#options.tokenTimeoutMs;
      return late > LIVENESS_GRACE_MS
        ? { live: false, reason: `a gentoken request has been in flight for ${round((now - this.#requestSentAt) / 1000)} s, far beyond its deadline: the token loop is stuck` }
        : LIVE;
    }
    const dueAt = this.#timer.dueAt;
    if (dueAt === undefined) return { live: false, reason: 'no gentoken attempt is in flight or scheduled: the token loop has stopped' };
    if (now - dueAt > LIVENESS_GRACE_MS) {
      return { live: false, reason: `the scheduled gentoken attempt is ${round((now - dueAt) / 1000)} s overdue: the token loop is stuck` };
    }
    if (dueAt - now > this.#maxScheduleMs() + LIVENESS_GRACE_MS) {
      return { live: false, reason: `the next gentoken attempt is scheduled ${round((dueAt - now) / 1000)} s ahead, more than any setting allows` };
    }
    return LIVE;
  }

  /** Wall-clock ms of the next attempt (now while one is on the wire); undefined when none is scheduled. */
  nextAttemptWall(): number | undefined {
    const wall = this.#clock.wallNow();
    if (this.#requestSentAt !== undefined || this.#awaitingSlot) return wall;
    const dueAt = this.#timer.dueAt;
    return dueAt === undefined ? undefined : wall + Math.max(0, dueAt - this.#clock.now());
  }

  #noteDeferred(trigger: PacedTrigger, now: number, at: number, by: string | undefined): void {
    this.#onDeferred?.(trigger === 'upstream 401' ? 'upstream_401' : trigger);
    if (this.#deferring) return;
    this.#deferring = true;
    this.#logger.warn('gentoken call deferred', {
      trigger, by, waitSeconds: round((at - now) / 1000),
      ...(trigger === 'upstream 401' ? { meanwhile: 'the 401 waits for the scheduled renewal when it is due within 2 s, else it is passed back; the current token stays in use' } : {}),
    });
  }

  /** The furthest ahead any attempt is ever scheduled: a renewal, a backoff ceiling, a Retry-After, the start spread, the budget window. */
  #maxScheduleMs(): number {
    return Math.max(
      this.#options.maxLifetimeSeconds * 1000,
      this.#pacer.longestWaitMs(),
      (this.#options.startJitterSeconds ?? 0) * 1000,
    );
  }
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
