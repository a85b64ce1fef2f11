/**
 * token/: the AuthToken: the gentoken client, the credential store (ApiKey/password files), this
 * manager (schedule, backoff, single flight, invalidation), the token file.
 * May import: shared/, config/, observability/, upstream/.
 */
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../shared/clock.js';
import { LoopTimer } from './loop-timer.js';
import type { TokenGauges, TokenView } from './token-view.js';
import { causeOf, failureReason } from './failure-reasons.js';
import type { CredentialStore } from './credential-store.js';
import { SidecarError, TokenRequestError, TokenUnavailableError } from '../shared/errors.js';
import { fingerprint, type SecretSet } from '../shared/secrets.js';
import type { AuthResult, Credentials, TokenClient } from './token-client.js';
import { createTokenFileWriter, type TokenFileWriter } from './token-file.js';
import { GentokenPacer, type PacedTrigger } from './gentoken-pacer.js';
import { parseRetryAfter } from './retry-after.js';
import type { GentokenCause, GentokenTrigger } from '../observability/metrics.js';
import { AnswerRules, PATH_MEMORY_MS, SUPERSEDED_WINDOW_MS, type RejectedToken, type SuspectForm } from './answer-rules.js';

/** Outcome of one gentoken attempt, for the refresh counter. */
import type { RefreshResult } from '../observability/metrics.js';
export type { RefreshResult, GentokenCause, GentokenTrigger };

/** One obtained token and what it was obtained with. Immutable; replaced on every renewal. */
export interface TokenSnapshot {
  readonly value: string;
  /** Grows by one with every token; an upstream 401 names the generation it carried. */
  readonly generation: number;
  readonly fingerprint: string;
  /** The ApiKey the token was obtained with: attach this one, not whatever the store holds now. */
  readonly apiKey: string;
  readonly rkObjectId?: string;
  /** Monotonic ms when the gentoken request was sent (the lifetime counts from here). */
  readonly obtainedAt: number;
  readonly obtainedAtWall: number;
  /** Monotonic ms: obtainedAt + effective lifetime. */
  readonly expiresAt: number;
  /** Effective lifetime: min(aliveSecondsTtl, maxLifetimeSeconds). */
  readonly lifetimeSeconds: number;
}

/** What the manager reads of the config: wired key by key in service/service-part.ts (`tokenManagerOptions`). */
export interface TokenManagerOptions {
  /** Fraction of the effective lifetime after which the token is renewed, in (0, 0.9]. */
  renewAt: number;
  maxLifetimeSeconds: number;
  /** Where to write the current token (mode 0600) on every renewal. */
  file?: string;
  /** Longest wait of `acquire()` / `invalidate()` for an in-flight refresh, in ms. */
  tokenTimeoutMs: number;
  /** `token.maxGentokenPerMinute`: hard ceiling on gentoken calls in any 60 s; undefined = none (tests only). */
  maxGentokenPerMinute?: number;
  /** `token.maxRetryAfterSeconds`: the longest Retry-After honoured; default 600. */
  maxRetryAfterSeconds?: number;
  /** `token.startJitterSeconds`: random delay up to this before the first gentoken call; default 0 (off). */
  startJitterSeconds?: number;
}

export interface TokenManagerDeps {
  client: Pick<TokenClient, 'requestToken'>;
  credentials: Pick<CredentialStore, 'current'>;
  clock: Clock;
  logger: Logger;
  secrets: SecretSet;
  /** Uniform in [0, 1), for jitter and backoff; defaults to Math.random. */
  random?: () => number;
  /** Called once per gentoken attempt with its result and latency in seconds. */
  onRefresh?: (result: RefreshResult, seconds: number) => void;
  /** Called once per failed gentoken attempt with its cause. */
  onFailure?: (cause: GentokenCause) => void;
  /** Called once per gentoken call held back by the budget or a Retry-After. */
  onDeferred?: (trigger: GentokenTrigger) => void;
  /** Called for each young token that had succeeded, was rejected and replaced by a renewal that helped (another holder of the key?). */
  onSuperseded?: () => void;
  /** The config file the process runs with, for the doctor command a hint prints. */
  configPath?: string;
  options: TokenManagerOptions;
}

type Trigger = PacedTrigger;
type Failure = GentokenCause;

/** A token is unusable within min(5 s, 10 % of its lifetime) of expiry: requests take time too. */
const MAX_MARGIN_MS = 5_000;
const MARGIN_FRACTION = 0.1;
/** Renewal moves earlier by up to 10 % of its delay so a fleet does not renew in lock-step. */
const JITTER_FRACTION = 0.1;
/** Even when a response arrives after its renewal time, do not renew back to back. */
const MIN_RENEW_DELAY_MS = 250;
/**
 * A 401 whose renewal the budget holds back waits for the token's scheduled renewal (never held
 * back) when it falls due within this long, and is replayed with its token: under revocations,
 * short-lived tokens then cost clients no 401 and the service no extra call (docs/design.md,
 * "Reading the answers").
 */
const SCHEDULED_RENEWAL_WAIT_MS = 2_000;
const READY = Object.freeze({ ready: true });
const LIVE = Object.freeze({ live: true });
/**
 * Timers fire late when the event loop is busy; a scheduled attempt (or a request past its own
 * deadline) later than this means the loop is dead or stuck, not merely slow.
 */
const LIVENESS_GRACE_MS = 60_000;
const DEFAULT_MAX_RETRY_AFTER_SECONDS = 600;

/**
 * The parts: the answer rules (answer-rules.ts) judge what the service says; the pacer
 * (gentoken-pacer.ts: budget, Retry-After, retry schedules) says when the next call may go and the
 * loop timer (loop-timer.ts) waits for it; failure-reasons.ts words what went wrong; this class holds
 * the token and ties them together, and token-view.ts is what the rest of the sidecar reads of it.
 *
 * Owns the token: obtains it at start, renews it at `renewAt` of its lifetime, retries failures
 * with backoff, and hands it to the proxy. Every gentoken request goes through one single-flight
 * promise, so neither timers nor request traffic can cause concurrent or bursty token requests.
 */
export class TokenManager implements TokenView {
  readonly #client: Pick<TokenClient, 'requestToken'>;
  readonly #credentials: Pick<CredentialStore, 'current'>;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #secrets: SecretSet;
  readonly #random: () => number;
  readonly #onRefresh: ((result: RefreshResult, seconds: number) => void) | undefined;
  readonly #options: TokenManagerOptions;
  readonly #file: TokenFileWriter | undefined;
  #deferred: Promise<TokenSnapshot | undefined> | undefined;
  /** 401s waiting for the scheduled renewal: each takes the first token whose call went out after it arrived. */
  #renewalWaiters: Array<{ since: number; settle: (token: TokenSnapshot | undefined) => void }> = [];
  #mintedAfter401: TokenSnapshot | undefined;
  /** What the service's answers say (answer-rules.ts). */
  readonly #rules: AnswerRules;
  /** The token the last 401-triggered renewal replaces, for judging the replays' answers. */
  #rejected: RejectedToken | undefined;
  /** Monotonic ms the current token's scheduled renewal is due at. */
  #renewDueAt = Infinity;
  /** The lifetime note (renewals the budget does not hold back) is logged once. */
  #lifetimeNoted = false;
  readonly #onSuperseded: (() => void) | undefined;
  readonly #configPath: string | undefined;
  /** The pace of gentoken calls: budget, Retry-After, retry schedules (gentoken-pacer.ts). */
  readonly #pacer: GentokenPacer;
  #token: TokenSnapshot | undefined;
  /** expiresAt minus the margin, precomputed so current() only compares numbers. */
  #usableUntil = -Infinity;
  #bad = false;
  #generation = 0;
  #inflight: Promise<TokenSnapshot> | undefined;
  #failure: Failure | undefined;
  #lastInvalidateAt = -Infinity;
  #started = false;
  #stopped = false;
  /** The failure's own words (TLS detail, HTTP status) for the /readyz message of some causes. */
  #failureDetail = '';
  /** The loop's one timer: the next attempt, whatever its trigger. */
  readonly #loop: LoopTimer;
  /** Monotonic ms the gentoken request in flight was sent; undefined when none is on the wire. */
  #requestSentAt: number | undefined;
  /** Wakes an attempt waiting for the budget or a Retry-After when stop() is called. */
  #releaseGate: ((err: Error) => void) | undefined;
  /** True from the first held-back call until a call passes without waiting: one log line per episode. */
  #deferring = false;
  /** Monotonic ms a held-back attempt waits for; undefined when no attempt is held back. */
  #gatedUntil: number | undefined;
  readonly #onFailureCause: ((cause: GentokenCause) => void) | undefined;
  readonly #onDeferred: ((trigger: GentokenTrigger) => void) | undefined;

  constructor(deps: TokenManagerDeps) {
    this.#client = deps.client;
    this.#credentials = deps.credentials;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#secrets = deps.secrets;
    const random = deps.random ?? Math.random;
    this.#random = () => Math.min(Math.max(random(), 0), 1);
    this.#onRefresh = deps.onRefresh;
    this.#onSuperseded = deps.onSuperseded;
    this.#configPath = deps.configPath;
    this.#options = deps.options;
    this.#file = deps.options.file ? createTokenFileWriter(deps.options.file, deps.logger) : undefined;
    this.#pacer = new GentokenPacer({
      ...(deps.options.maxGentokenPerMinute !== undefined ? { maxGentokenPerMinute: deps.options.maxGentokenPerMinute } : {}),
      maxRetryAfterSeconds: deps.options.maxRetryAfterSeconds ?? DEFAULT_MAX_RETRY_AFTER_SECONDS,
      random: this.#random,
    });
    this.#onFailureCause = deps.onFailure;
    this.#onDeferred = deps.onDeferred;
    this.#rules = new AnswerRules(() => this.#clock.now());
    this.#loop = new LoopTimer(deps.clock);
  }

  /** Requests the first token now. Never throws: failures are logged and retried. */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    const jitterMs = (this.#options.startJitterSeconds ?? 0) * 1000;
    // A fleet started at once (a deploy, a node reboot) would otherwise call gentoken in lock-step.
    if (jitterMs > 0) this.#loop.arm(this.#clock.now() + Math.floor(this.#random() * jitterMs), () => this.#kick('start'));
    else this.#kick('start');
  }

  /** Cancels timers; a request in flight finishes but schedules nothing. Idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#loop.cancel();
    for (const waiter of this.#renewalWaiters.splice(0)) waiter.settle(undefined);
    this.#releaseGate?.(new TokenUnavailableError('the token manager was stopped'));
    await this.#file?.flush();
  }

  /** The hot path: the token if it is valid, outside the expiry margin and not marked bad. */
  current(): TokenSnapshot | undefined {
    return this.#token !== undefined && !this.#bad && this.#clock.now() < this.#usableUntil ? this.#token : undefined;
  }

  /** The token synchronously when valid; else waits for an in-flight refresh; else rejects with the reason. */
  acquire(): TokenSnapshot | Promise<TokenSnapshot> {
    const token = this.current();
    if (token) return token;
    // An attempt held back by the budget or a Retry-After may wait far longer than a request should.
    if (this.#inflight && this.#gatedUntil === undefined) return this.#bounded(this.#inflight);
    return Promise.reject(new TokenUnavailableError(this.#reason()));
  }

  /**
   * The service answered 401 to a request that carried `generation` on `path` (its first attempt,
   * not a replay). Resolves with a newer token to replay with, or undefined: pass the 401 back.
   * The answer rules (answer-rules.ts) judge it: a path whose 401s are its own is passed back at
   * once; otherwise one renewal (single flight, at most one per interval) and a replay. A renewal
   * the budget or a Retry-After holds back is not waited for: the 401 goes back and the current
   * token stays in use (the service decides about it, not a deferred renewal).
   */
  invalidate(generation: number, path = '/'): Promise<TokenSnapshot | undefined> {
    if (this.#stopped) return PASS;
    const token = this.#token;
    const before = this.#rules.suspect;
    const verdict = this.#rules.unauthorized(generation, path);
    if (verdict === 'newly-remembered') {
      this.#logger.info('the service answers 401 on this path even with a fresh token that other requests succeed with: its 401s are passed back without renewing', {
        path: shortPath(path), forMinutes: PATH_MEMORY_MS / 60_000,
      });
    }
    if (verdict === 'remembered' || verdict === 'newly-remembered') return PASS;
    if (before === undefined && this.#rules.suspect !== undefined) this.#suspectEntered(this.#rules.suspect, path);
    // A newer token is safe to reuse only if it was minted because of a 401: it then postdates
    // the revocation. One from a routine renewal may predate the revocation that rejected the
    // older token, and would be rejected as well (seen in the soak benchmark).
    if (token && token.generation > generation && this.#mintedAfter401 === token) return this.#newer(generation);
    // An attempt held back (a rotation or retry waiting for the budget) may wait far longer than a request should.
    if (this.#inflight && this.#gatedUntil !== undefined) return this.#newer(generation);
    if (this.#inflight) return this.#bounded(this.#inflight).then((t) => (t.generation > generation ? t : undefined));
    // A failing auth server is already retried on its backoff; request traffic must not add calls.
    if (this.#failure !== undefined) return this.#newer(generation);
    const now = this.#clock.now();
    const wait = this.#lastInvalidateAt + this.#rules.renewIntervalMs - now;
    if (wait > 0) {
      // Too soon after the last 401-triggered renewal. When nothing suggests a renewal would not
      // help (an ordinary revocation storm), one renewal is deferred to the end of the window and
      // the 401s in the meantime wait for it (1 s at most), so a second revocation still heals.
      // Otherwise (a renewal that did not help, token.attach suspect) the 401 goes back at once.
      if (verdict !== 'renew' || !this.#rules.holdsForRenewal) return this.#newer(generation);
      this.#deferred ??= new Promise<TokenSnapshot | undefined>((resolve, reject) => {
        this.#clock.setTimeout(() => {
          this.#deferred = undefined;
          this.invalidate(generation, path).then(resolve, reject);
        }, wait);
      });
      return this.#deferred;
    }
    if (!this.#mayCallNow('upstream 401', now)) return this.#scheduledRenewal(generation, now);
    this.#lastInvalidateAt = now;
    const rejectedCurrent = token !== undefined && token.generation === generation;
    if (rejectedCurrent) {
      // Held back from requests only while its renewal is on the wire: milliseconds.
      this.#bad = true;
      this.#rejected = { generation, obtainedAt: token.obtainedAt, lifetimeSeconds: token.lifetimeSeconds, proven: this.#rules.proven(generation) };
    }
    this.#logger.warn('the service rejected the token; renewing', { fingerprint: token?.fingerprint, generation });
    const refreshed = this.#refresh('upstream 401').catch((err: unknown) => {
      // The auth server failed, not necessarily the token: keep serving it while it is valid.
      if (this.#token === token) this.#bad = false;
      throw err;
    });
    return this.#bounded(refreshed);
  }

  /**
   * A request carrying `generation` was answered `status` on `path` (anything but a first 401;
   * a replay's answer names the generation it replaced in `replayOf`). On the request path: a
   * couple of comparisons when nothing is pending.
   */
  answered(generation: number, status: number, path: string, replayOf?: number): void {
    if (replayOf !== undefined) return this.#replayAnswered(replayOf, generation, status, path);
    const change = this.#rules.answered(generation, status, path);
    if (change === 'suspect') this.#suspectEntered('answers', path);
    else if (change === 'cleared') this.#suspectCleared(generation);
  }

  /** Non-fatal conditions `/readyz` reports beside its verdict (a new array each call). */
  warnings(): string[] {
    const form = this.#rules.suspect;
    if (form === undefined) return [];
    const probe = shortPath(this.#rules.suspectPath ?? '/');
    if (form === 'unauthorized') {
      return [`requests get 401 even with freshly obtained tokens, on several paths, and none succeeds: token.attach probably presents the token in a way the service does not accept (b2b-sidecar doctor --probe ${probe} --discover-attach)`];
    }
    return [`no request has succeeded since the token was obtained (only refusals such as 400, 403, 404 or a redirect, on several paths): token.attach probably presents the token in a way the service does not accept (b2b-sidecar doctor --probe ${probe} --discover-attach)`];
  }

  /** True while `token.attach` is suspect (the `b2b_sidecar_attach_suspect` gauge). */
  attachSuspect(): boolean {
    return this.#rules.suspect !== undefined;
  }

  #replayAnswered(replayOf: number, fresh: number, status: number, path: string): void {
    const before = this.#rules.suspect;
    this.#rules.answered(fresh, status, path);
    const pending = this.#rejected;
    const rejected: RejectedToken = pending?.generation === replayOf ? pending : { generation: replayOf, obtainedAt: -Infinity, lifetimeSeconds: 0, proven: false };
    const verdict = this.#rules.replayed(rejected, fresh, status, path);
    const after = this.#rules.suspect;
    if (before === undefined && after !== undefined) this.#suspectEntered(after, path);
    else if (before !== undefined && after === undefined) this.#suspectCleared(fresh);
    if (verdict.kind === 'superseded') {
      this.#onSuperseded?.();
      if (verdict.tripped) {
        this.#logger.warn('tokens this process still holds are rejected long before they expire: another process is probably obtaining tokens with the same ApiKey (the service keeps one token per key). Give each replica its own ApiKey, or run one sidecar per key', {
          rejections: verdict.count, windowMinutes: SUPERSEDED_WINDOW_MS / 60_000,
        });
      }
    } else if (verdict.kind === 'refused' && after === undefined && before === undefined) {
      this.#logger.warn('a freshly obtained token was rejected too; slowing down 401-triggered renewals', {
        path: shortPath(path), nextAllowedInSeconds: this.#rules.renewIntervalMs / 1000,
      });
    } else if (verdict.kind === 'path-own') {
      this.#logger.debug('a fresh token was rejected on this path too; its 401s are the path\'s own once the token succeeds elsewhere', { path: shortPath(path) });
    }
  }

  #suspectEntered(form: SuspectForm, path: string): void {
    const probe = shortPath(this.#rules.suspectPath ?? path);
    const command = `b2b-sidecar doctor --config ${this.#configPath ?? '<config file>'} --probe ${probe} --discover-attach`;
    if (form === 'unauthorized') {
      this.#logger.error(`freshly obtained tokens are rejected too, on several paths, and no request succeeds: token.attach probably presents the token in a way the service does not accept. Find the right way with: ${command}`, {
        fingerprint: this.#token?.fingerprint,
      });
    } else {
      const { answers, lastStatus } = this.#rules.evidence;
      this.#logger.error(`no request has succeeded since the token was obtained (${answers} answers on several paths, none 2xx or 304; the last was ${lastStatus}): token.attach probably presents the token in a way the service does not accept. Find the right way with: ${command}`, {
        fingerprint: this.#token?.fingerprint,
      });
    }
  }

  #suspectCleared(generation: number): void {
    this.#logger.info('the service accepts the token again; token.attach is no longer suspect', { generation });
  }

  /** Resolves with the current token when it is newer than `generation` (to replay with), else undefined. */
  /**
   * A 401 whose renewal the budget holds back: when the scheduled renewal falls due within
   * SCHEDULED_RENEWAL_WAIT_MS, wait for its token (a call sent after the 401 arrived postdates the
   * revocation) and replay with it; otherwise pass the 401 back at once.
   */
  #scheduledRenewal(generation: number, now: number): Promise<TokenSnapshot | undefined> {
    const due = this.#renewDueAt - now;
    if (!(due <= SCHEDULED_RENEWAL_WAIT_MS)) return this.#newer(generation);
    return new Promise((resolve) => {
      const waiter = {
        since: now,
        settle: (token: TokenSnapshot | undefined) => {
          this.#clock.clearTimeout(timer);
          resolve(token !== undefined && token.generation > generation ? token : undefined);
        },
      };
      // The renewal's own call may take up to the token timeout once it goes out.
      const timer = this.#clock.setTimeout(() => {
        this.#renewalWaiters = this.#renewalWaiters.filter((w) => w !== waiter);
        resolve(undefined);
      }, Math.max(0, due) + this.#options.tokenTimeoutMs);
      this.#renewalWaiters.push(waiter);
    });
  }

  #newer(generation: number): Promise<TokenSnapshot | undefined> {
    const t = this.current();
    return Promise.resolve(t !== undefined && t.generation > generation ? t : undefined);
  }

  /**
   * True when a gentoken call for `trigger` may go out at `now` (gentoken-pacer.ts). Otherwise
   * counts the call as deferred (logged once per episode).
   */
  #mayCallNow(trigger: Trigger, now: number): boolean {
    const { at, by } = this.#pacer.earliest(trigger, now, this.#renewDueAt);
    if (at <= now) return true;
    this.#noteDeferred(trigger, now, at, by);
    return false;
  }

  #noteDeferred(trigger: Trigger, now: number, at: number, by: string | undefined): void {
    this.#onDeferred?.(trigger === 'upstream 401' ? 'upstream_401' : trigger);
    if (this.#deferring) return;
    this.#deferring = true;
    this.#logger.warn('gentoken call deferred', {
      trigger, by, waitSeconds: round((at - now) / 1000),
      ...(trigger === 'upstream 401' ? { meanwhile: 'the 401 waits for the scheduled renewal when it is due within 2 s, else it is passed back; the current token stays in use' } : {}),
    });
  }

  /** Credentials changed: obtain a token with the new ones; if rejected, keep the old token. Never rejects. */
  async rotate(): Promise<void> {
    if (!this.#started || this.#stopped) return;
    // A request in flight carries the old credentials; the new ones need a request of their own.
    await this.#inflight?.catch(() => undefined);
    if (this.#stopped) return;
    await this.#refresh('rotation').catch(() => {
      if (this.#failure !== 'unauthorized') return;
      const kept = this.current();
      if (!kept) {
        this.#logger.error('new credentials rejected by the auth server; no valid token is held');
        return;
      }
      this.#logger.error('new credentials rejected by the auth server; keeping the previous token until it expires', {
        fingerprint: kept.fingerprint,
        expiresInSeconds: round((kept.expiresAt - this.#clock.now()) / 1000),
      });
    });
  }

  /** Readiness: ready while current() returns a token, else the reason clients are told. */
  status(): { ready: boolean; reason?: string } {
    return this.current() ? READY : { ready: false, reason: this.#reason() };
  }

  /**
   * Liveness (`/healthz`, and the systemd watchdog): false only when the token loop itself is dead
   * or stuck: no attempt on the wire and none scheduled, a scheduled attempt overdue, a request far
   * past its deadline, or an attempt scheduled further ahead than any setting allows. A vendor that
   * is down or rejects the credentials is readiness (`status()`), never liveness.
   */
  liveness(): { live: boolean; reason?: string } {
    if (!this.#started || this.#stopped) return LIVE;
    const now = this.#clock.now();
    if (this.#requestSentAt !== undefined) {
      const late = now - this.#requestSentAt - this.#options.tokenTimeoutMs;
      return late > LIVENESS_GRACE_MS
        ? { live: false, reason: `a gentoken request has been in flight for ${round((now - this.#requestSentAt) / 1000)} s, far beyond its deadline: the token loop is stuck` }
        : LIVE;
    }
    if (this.#loop.dueAt === undefined) return { live: false, reason: 'no gentoken attempt is in flight or scheduled: the token loop has stopped' };
    if (now - this.#loop.dueAt > LIVENESS_GRACE_MS) {
      return { live: false, reason: `the scheduled gentoken attempt is ${round((now - this.#loop.dueAt) / 1000)} s overdue: the token loop is stuck` };
    }
    if (this.#loop.dueAt - now > this.#maxScheduleMs() + LIVENESS_GRACE_MS) {
      return { live: false, reason: `the next gentoken attempt is scheduled ${round((this.#loop.dueAt - now) / 1000)} s ahead, more than any setting allows` };
    }
    return LIVE;
  }

  /** Scrape-time gauges: seconds on the monotonic clock, timestamps in wall-clock Unix seconds. */
  gauges(): TokenGauges {
    const t = this.#token;
    const now = this.#clock.now();
    const wall = this.#clock.wallNow();
    let next = 0;
    if (this.#requestSentAt !== undefined) next = wall / 1000;
    else if (this.#loop.dueAt !== undefined) next = (wall + Math.max(0, this.#loop.dueAt - now)) / 1000;
    return {
      ageSeconds: t ? (now - t.obtainedAt) / 1000 : 0,
      expiresInSeconds: t ? Math.max(0, t.expiresAt - now) / 1000 : 0,
      valid: this.current() !== undefined,
      expiryTimestampSeconds: t ? (t.obtainedAtWall + t.lifetimeSeconds * 1000) / 1000 : 0,
      nextRefreshTimestampSeconds: next,
    };
  }

  /** The furthest ahead any attempt is ever scheduled: a renewal, a backoff ceiling, a Retry-After, the start spread, the budget window. */
  #maxScheduleMs(): number {
    return Math.max(
      this.#options.maxLifetimeSeconds * 1000,
      this.#pacer.longestWaitMs(),
      (this.#options.startJitterSeconds ?? 0) * 1000,
    );
  }

  #refresh(trigger: Trigger): Promise<TokenSnapshot> {
    if (this.#inflight) return this.#inflight;
    const p = this.#attempt(trigger);
    this.#inflight = p;
    p.catch(() => undefined); // a timer-started attempt may have no listener
    return p;
  }

  #kick(trigger: Trigger): void {
    void this.#refresh(trigger).catch(() => undefined);
  }

  async #attempt(trigger: Trigger): Promise<TokenSnapshot> {
    this.#loop.cancel();
    try {
      // Through a microtask, so #inflight is set before this can settle even if the gate throws.
      await Promise.resolve().then(() => this.#gate(trigger));
    } catch (err) {
      this.#inflight = undefined;
      throw err;
    }
    const creds = this.#credentials.current();
    const sentAt = this.#clock.now();
    const sentAtWall = this.#clock.wallNow();
    this.#requestSentAt = sentAt;
    let result: AuthResult;
    try {
      result = await Promise.resolve().then(() => this.#client.requestToken(creds));
    } catch (err) {
      this.#inflight = undefined;
      this.#requestSentAt = undefined;
      this.#onFailure(err, trigger, this.#clock.now() - sentAt);
      throw new TokenUnavailableError(this.#reason());
    }
    this.#secrets.addToken(result.token); // before anything could log it
    this.#inflight = undefined;
    this.#requestSentAt = undefined;
    return this.#onSuccess(result, creds, sentAt, sentAtWall, trigger);
  }

  #onSuccess(result: AuthResult, creds: Credentials, sentAt: number, sentAtWall: number, trigger: Trigger): TokenSnapshot {
    const latencyMs = this.#clock.now() - sentAt;
    const lifetimeSeconds = Math.min(result.aliveSecondsTtl, this.#options.maxLifetimeSeconds);
    const lifetimeMs = lifetimeSeconds * 1000;
    const token: TokenSnapshot = Object.freeze({
      value: result.token,
      generation: ++this.#generation,
      fingerprint: fingerprint(result.token),
      apiKey: creds.apiKey,
      ...(creds.rkObjectId !== undefined ? { rkObjectId: creds.rkObjectId } : {}),
      obtainedAt: sentAt,
      obtainedAtWall: sentAtWall,
      expiresAt: sentAt + lifetimeMs,
      lifetimeSeconds,
    });
    this.#token = token;
    if (trigger === 'upstream 401') this.#mintedAfter401 = token;
    if (this.#renewalWaiters.length) {
      const waiting = this.#renewalWaiters;
      this.#renewalWaiters = waiting.filter((w) => w.since > sentAt);
      for (const waiter of waiting) if (waiter.since <= sentAt) waiter.settle(token);
    }
    this.#usableUntil = token.expiresAt - Math.min(MAX_MARGIN_MS, lifetimeMs * MARGIN_FRACTION);
    this.#bad = false;
    this.#failure = undefined;
    this.#pacer.succeeded();
    this.#onRefresh?.('success', latencyMs / 1000);
    let renewInSeconds: number | undefined;
    if (!this.#stopped) {
      const delay = lifetimeMs * this.#options.renewAt;
      const now = this.#clock.now();
      const at = Math.max(sentAt + delay - this.#random() * JITTER_FRACTION * delay, now + MIN_RENEW_DELAY_MS);
      this.#renewDueAt = at;
      this.#loop.arm(at, () => this.#kick('renewal'));
      renewInSeconds = round((at - now) / 1000);
      void this.#file?.write(token.value);
    }
    this.#logger.info('token obtained', {
      fingerprint: token.fingerprint, generation: token.generation, trigger, lifetimeSeconds, latencyMs: round(latencyMs), renewInSeconds,
    });
    this.#noteLifetime(lifetimeSeconds);
    return token;
  }

  /** Once: tokens so short-lived that their renewals alone would fill token.maxGentokenPerMinute. */
  #noteLifetime(lifetimeSeconds: number): void {
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
   * Waits until a gentoken call is allowed: after any Retry-After, whatever the trigger, and within
   * the per-minute budget unless it is a scheduled renewal. The wait is the loop's one timer, so
   * liveness sees it scheduled.
   */
  async #gate(trigger: Trigger): Promise<void> {
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
        this.#loop.arm(wake, resolve);
      }).finally(() => {
        this.#releaseGate = undefined;
        this.#gatedUntil = undefined;
      });
    }
  }

  #onFailure(err: unknown, trigger: Trigger, latencyMs: number): void {
    const failure = causeOf(err);
    this.#failure = failure;
    this.#failureDetail = err instanceof TokenRequestError ? err.message : '';
    this.#onRefresh?.(failure === 'unauthorized' ? 'unauthorized' : 'error', latencyMs / 1000);
    this.#onFailureCause?.(failure);
    const now = this.#clock.now();
    const retryAfterMs = err instanceof TokenRequestError
      ? parseRetryAfter(err.retryAfter, this.#clock.wallNow(), this.#pacer.maxRetryAfterMs)
      : undefined;
    // A Retry-After binds every trigger (renewal, 401, rotation), not only the scheduled retry.
    const delay = this.#pacer.failed(failure, retryAfterMs, now);
    let retryInSeconds: number | undefined;
    if (!this.#stopped) {
      // Even if the current token expires before the retry, keep the backoff: no tight loop.
      this.#loop.arm(now + delay, () => this.#kick('retry'));
      retryInSeconds = round(delay / 1000);
    }
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
    else this.#logger.warn('token request failed', { ...fields, cause: failure });
  }


  /**
   * Waits for `p` at most tokenTimeoutMs, then hands out only what current() would: a slow
   * gentoken can return a token already inside its expiry margin, and a waiter must not get it.
   */
  #bounded(p: Promise<TokenSnapshot>): Promise<TokenSnapshot> {
    return new Promise((resolve, reject) => {
      const timer = this.#clock.setTimeout(
        () => reject(new TokenUnavailableError('timed out waiting for a token')),
        this.#options.tokenTimeoutMs,
      );
      p.then(
        () => {
          this.#clock.clearTimeout(timer);
          const usable = this.current();
          if (usable) resolve(usable);
          else reject(new TokenUnavailableError(this.#reason()));
        },
        (e: unknown) => {
          this.#clock.clearTimeout(timer);
          reject(e as Error);
        },
      );
    });
  }

  #reason(): string {
    if (this.#failure !== undefined) return failureReason(this.#failure, this.#failureDetail, this.#pacer.notBefore - this.#clock.now());
    if (this.#gatedUntil !== undefined) {
      return `gentoken calls held back by token.maxGentokenPerMinute; next in ${Math.ceil((this.#gatedUntil - this.#clock.now()) / 1000)} s`;
    }
    if (!this.#token) return 'no token yet';
    return this.#bad ? 'token rejected by the service; renewing' : 'token expired; renewing';
  }
}

const PASS: Promise<undefined> = Promise.resolve(undefined);

/** A request path as logged and printed in the doctor command: without the query, at most 200 characters. */
function shortPath(path: string): string {
  return path.split('?')[0]!.slice(0, 200) || '/';
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
