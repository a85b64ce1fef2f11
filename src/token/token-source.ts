import type { Logger } from '../observability/logger.js';
import type { GentokenCause, RefreshResult } from '../observability/metrics.js';
import type { Clock } from '../shared/clock.js';
import { SidecarError, TokenRequestError, TokenUnavailableError } from '../shared/errors.js';
import type { SecretSet } from '../shared/secrets.js';
import { UNAUTHORIZED_BACKOFF } from './pacing/backoff.js';
import type { CredentialStore } from './credential-store.js';
import { causeOf, failureReason } from './answers/failure-reasons.js';
import { retriedSlowly, type PacedTrigger } from './pacing/gentoken-pacer.js';
import type { RenewalLoop } from './pacing/renewal-loop.js';
import type { GentokenSlots, ReleaseSlot } from './pacing/gentoken-slots.js';
import { parseRetryAfter } from './pacing/retry-after.js';
import type { AnswerCall, InFlight, TokenAcquisition } from './token-acquisition.js';
import type { AuthResult, Credentials, TokenClient } from './token-client.js';
import type { TokenSnapshot, TokenState } from './token-state.js';

export interface TokenSourceDeps {
  client: Pick<TokenClient, 'requestToken'>;
  credentials: Pick<CredentialStore, 'current'>;
  clock: Clock;
  logger: Logger;
  secrets: SecretSet;
  /** Where each attempt's outcome is recorded (shared with the manager and the 401 flow). */
  state: TokenState;
  /** The pace every call keeps (its gate, budget, retry schedules) and the timer of the next attempt. */
  loop: RenewalLoop;
  maxLifetimeSeconds: number;
  /** Longest wait of `bounded()` for an attempt, in ms (`service.tokenTimeoutMs`). */
  tokenTimeoutMs: number;
  /** A token arrived from an attempt `trigger` started, sent at `sentAt` (monotonic ms): the 401 flow's waiters, the token file. */
  onObtained?: (token: TokenSnapshot, trigger: PacedTrigger, sentAt: number) => void;
  /** Called once per gentoken attempt with its result and latency in seconds. */
  onRefresh?: (result: RefreshResult, seconds: number) => void;
  /** Called once per failed gentoken attempt with its cause. */
  onFailure?: (cause: GentokenCause) => void;
  /** The gentoken calls of several credential sets, a few at a time (gentoken-slots.ts); none: no limit, no wait. */
  slots?: GentokenSlots;
  /**
   * Where the loop's timers (start, renewal, retry) send their attempt: this source's own
   * `acquire` by default; the fleet source's when one wraps this (token/fleet-source.ts), so a
   * renewal reads the shared store before any gentoken call.
   */
  kick?: (trigger: PacedTrigger) => void;
}

/** What `retryNow()` did, for the SIGHUP log line. */
export type RetryAnswer = 'attempt now' | 'not needed (a valid token is held)' | 'an attempt is already under way' | `left to the schedule: the last call was ${number} s ago`;

/**
 * The one owner of token acquisition in this process: the single flight of gentoken attempts
 * (one on the wire at most, whoever asks: the renewal loop's timers, a 401, a rotation, a retry
 * signal), each through the renewal loop's gate (Retry-After, budget) and recorded in the token
 * state with its retry or renewal armed on the loop. Neither timers nor request traffic can cause
 * concurrent or bursty token requests.
 */
export class TokenSource implements TokenAcquisition {
  readonly #client: Pick<TokenClient, 'requestToken'>;
  readonly #credentials: Pick<CredentialStore, 'current'>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #secrets: SecretSet;
  readonly #state: TokenState;
  readonly #loop: RenewalLoop;
  readonly #maxLifetimeSeconds: number;
  readonly #tokenTimeoutMs: number;
  readonly #onObtained: TokenSourceDeps['onObtained'];
  readonly #onRefresh: TokenSourceDeps['onRefresh'];
  readonly #onFailure: TokenSourceDeps['onFailure'];
  readonly #slots: GentokenSlots | undefined;
  readonly #kickTo: TokenSourceDeps['kick'];
  #inflight: Promise<TokenSnapshot> | undefined;
  /** The last attempt failed in a way retried on the lockout-safe schedule (a refusal, a configuration failure). */
  #lastFailureSlow = false;
  /** Monotonic ms the last gentoken request went out; undefined before the first. */
  #lastSentAt: number | undefined;
  /** Monotonic ms the attempt in flight went on the wire after waiting for a slot; undefined otherwise. */
  #sentAfterSlotAt: number | undefined;

  constructor(deps: TokenSourceDeps) {
    this.#client = deps.client;
    this.#credentials = deps.credentials;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#secrets = deps.secrets;
    this.#state = deps.state;
    this.#loop = deps.loop;
    this.#maxLifetimeSeconds = deps.maxLifetimeSeconds;
    this.#tokenTimeoutMs = deps.tokenTimeoutMs;
    this.#onObtained = deps.onObtained;
    this.#onRefresh = deps.onRefresh;
    this.#onFailure = deps.onFailure;
    this.#slots = deps.slots;
    this.#kickTo = deps.kick;
  }

  /** The first attempt, at once or after the loop's start spread. */
  start(): void {
    this.#loop.start(() => this.#kick('start'));
  }

  current(): TokenSnapshot | undefined {
    return this.#state.usable(this.#clock.now());
  }

  acquire(trigger: PacedTrigger): Promise<TokenSnapshot> {
    if (this.#inflight) return this.#inflight;
    const p = this.#attempt(trigger);
    this.#inflight = p;
    p.catch(() => undefined); // a timer-started attempt may have no listener
    return p;
  }

  inflight(): InFlight | undefined {
    return this.#inflight ? { attempt: this.#inflight, held: this.#loop.gatedUntil !== undefined } : undefined;
  }

  mayCall(call: AnswerCall, now: number): boolean {
    return call === 'judgement' ? this.#loop.mayJudgeNow(now) : this.#loop.mayCallNow(call, now);
  }

  renewDueAt(): number {
    return this.#loop.renewDueAt;
  }

  /**
   * Waits for `p` at most tokenTimeoutMs (and `extraMs`: a fleet's wait for a peer's claim), then
   * hands out only what current() would: a slow gentoken can return a token already inside its
   * expiry margin, and a waiter must not get it.
   */
  bounded(p: Promise<TokenSnapshot>, extraMs = 0): Promise<TokenSnapshot> {
    return new Promise((resolve, reject) => {
      const timedOut = () => reject(new TokenUnavailableError('timed out waiting for a token'));
      // An attempt that waited for a slot (other sets' calls) gets its own full deadline once it
      // is sent: the wait for the slot is not the service's slowness (at most tokenTimeoutMs more).
      let timer = this.#clock.setTimeout(() => {
        const sent = this.#sentAfterSlotAt;
        const end = sent === undefined ? 0 : sent + this.#tokenTimeoutMs;
        if (end > this.#clock.now()) timer = this.#clock.setTimeout(timedOut, end - this.#clock.now());
        else timedOut();
      }, this.#tokenTimeoutMs + extraMs);
      p.then(
        () => {
          this.#clock.clearTimeout(timer);
          const usable = this.current();
          if (usable) resolve(usable);
          else reject(new TokenUnavailableError(this.reason()));
        },
        (e: unknown) => {
          this.#clock.clearTimeout(timer);
          reject(e as Error);
        },
      );
    });
  }

  /**
   * An operator's signal (SIGHUP): one attempt now when no valid token is held or the last attempt
   * was refused, never sooner than the lockout-safe schedule's first step after the last call.
   */
  retryNow(): RetryAnswer {
    if (this.#inflight) return 'an attempt is already under way';
    if (this.current() && !this.#lastFailureSlow) return 'not needed (a valid token is held)';
    const since = this.#lastSentAt === undefined ? Infinity : this.#clock.now() - this.#lastSentAt;
    if (since < UNAUTHORIZED_BACKOFF.minMs) return `left to the schedule: the last call was ${round(since / 1000)} s ago`;
    this.#kick('retry');
    return 'attempt now';
  }

  /** Why no token is usable, in the words clients and `/readyz` are told. */
  reason(): string {
    const failure = this.#state.failure;
    if (failure !== undefined) return failureReason(failure.cause, failure.detail, this.#loop.notBefore - this.#clock.now());
    const gatedUntil = this.#loop.gatedUntil;
    if (gatedUntil !== undefined) {
      return `gentoken calls held back by token.maxGentokenPerMinute; next in ${Math.ceil((gatedUntil - this.#clock.now()) / 1000)} s`;
    }
    if (!this.#state.token) return 'no token yet';
    return this.#state.bad ? 'token rejected by the service; renewing' : 'token expired; renewing';
  }

  #kick(trigger: PacedTrigger): void {
    if (this.#kickTo) this.#kickTo(trigger);
    else void this.acquire(trigger).catch(() => undefined);
  }

  async #attempt(trigger: PacedTrigger): Promise<TokenSnapshot> {
    this.#loop.attemptBegins();
    try {
      // Through a microtask, so #inflight is set before this can settle even if the gate throws.
      await Promise.resolve().then(() => this.#loop.gate(trigger));
    } catch (err) {
      this.#inflight = undefined;
      throw err;
    }
    // Only the call itself holds a slot: Retry-After and the budget above have had their say, and
    // its latency, deadline and liveness count from when it is sent, not from the wait.
    let release: ReleaseSlot | undefined;
    let waited = false;
    if (this.#slots) {
      try {
        const slot = this.#loop.slot(this.#slots);
        waited = typeof slot !== 'function';
        release = typeof slot === 'function' ? slot : await slot;
      } catch (err) {
        this.#inflight = undefined;
        throw err;
      }
    }
    const creds = this.#credentials.current();
    const sentAt = this.#clock.now();
    const sentAtWall = this.#clock.wallNow();
    this.#loop.requestSentAt = sentAt;
    this.#lastSentAt = sentAt;
    this.#sentAfterSlotAt = waited ? sentAt : undefined;
    let result: AuthResult;
    try {
      result = await Promise.resolve().then(() => this.#client.requestToken(creds));
    } catch (err) {
      release?.();
      this.#inflight = undefined;
      this.#sentAfterSlotAt = undefined;
      this.#loop.requestSentAt = undefined;
      this.#failed(err, trigger, this.#clock.now() - sentAt);
      throw new TokenUnavailableError(this.reason());
    }
    release?.();
    this.#secrets.addToken(result.token); // before anything could log it
    this.#inflight = undefined;
    this.#sentAfterSlotAt = undefined;
    this.#loop.requestSentAt = undefined;
    return this.#obtained(result, creds, sentAt, sentAtWall, trigger);
  }

  #obtained(result: AuthResult, creds: Credentials, sentAt: number, sentAtWall: number, trigger: PacedTrigger): TokenSnapshot {
    const latencyMs = this.#clock.now() - sentAt;
    const lifetimeSeconds = Math.min(result.aliveSecondsTtl, this.#maxLifetimeSeconds);
    const token = this.#state.obtained(result, creds, sentAt, sentAtWall, lifetimeSeconds);
    this.#onObtained?.(token, trigger, sentAt);
    this.#lastFailureSlow = false;
    this.#onRefresh?.('success', latencyMs / 1000);
    const renewInSeconds = this.#loop.succeeded(sentAt, lifetimeSeconds * 1000, () => this.#kick('renewal'));
    this.#logger.info('token obtained', {
      fingerprint: token.fingerprint, generation: token.generation, trigger, lifetimeSeconds, latencyMs: round(latencyMs), renewInSeconds,
    });
    this.#loop.noteLifetime(lifetimeSeconds);
    return token;
  }

  #failed(err: unknown, trigger: PacedTrigger, latencyMs: number): void {
    const failure = causeOf(err);
    this.#state.failed(failure, err instanceof TokenRequestError ? err.message : '', this.#clock.wallNow());
    this.#onRefresh?.(failure === 'unauthorized' ? 'unauthorized' : 'error', latencyMs / 1000);
    this.#onFailure?.(failure);
    const retryAfterMs = err instanceof TokenRequestError
      ? parseRetryAfter(err.retryAfter, this.#clock.wallNow(), this.#loop.maxRetryAfterMs)
      : undefined;
    // The service refused the client certificate (or its absence): no retry can change that.
    const configuration = err instanceof TokenRequestError && err.configuration;
    this.#lastFailureSlow = retriedSlowly(failure, retryAfterMs, configuration);
    // A Retry-After binds every trigger (renewal, 401, rotation), not only the scheduled retry.
    const retryInSeconds = this.#loop.failed(failure, retryAfterMs, () => this.#kick('retry'), configuration);
    const kept = this.current();
    // Token errors carry secret-free messages by construction; anything else is named only.
    const reason = err instanceof SidecarError ? err.message : `unexpected ${(err as Error)?.name ?? 'error'}`;
    const fields = {
      trigger, reason, retryInSeconds,
      keptToken: kept?.fingerprint,
      keptTokenExpiresInSeconds: kept ? round((kept.expiresAt - this.#clock.now()) / 1000) : undefined,
    };
    if (failure === 'unauthorized') this.#logger.error('token request rejected by the auth server', fields);
    else if (failure === 'refused') this.#logger.error('token request refused by the auth server (HTTP 403)', { ...fields, cause: failure });
    else if (configuration) this.#logger.error('token request failed', { ...fields, cause: failure });
    else this.#logger.warn('token request failed', { ...fields, cause: failure });
  }
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
