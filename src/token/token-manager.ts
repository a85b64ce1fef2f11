/**
 * token/: the AuthToken: the gentoken client, the credential store (ApiKey/password files), the
 * token source (the single flight of gentoken calls, token-source.ts), this manager (its face to the
 * sidecar: start, stop, rotation, invalidation, status), the token file.
 * May import: shared/, config/, observability/, upstream/.
 */
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../shared/clock.js';
import { RenewalLoop } from './pacing/renewal-loop.js';
import { tokenStatus, type TokenView } from './token-view.js';
import type { TokenStatus } from '../observability/status.js';
import { TokenState, type TokenSnapshot } from './token-state.js';
import type { CredentialStore } from './credential-store.js';
import { TokenUnavailableError } from '../shared/errors.js';
import type { SecretSet } from '../shared/secrets.js';
import type { TokenClient } from './token-client.js';
import { createTokenFileWriter, type TokenFileWriter } from './token-file.js';
import type { GentokenCause, GentokenTrigger } from '../observability/metrics.js';
import type { PacedTrigger } from './pacing/gentoken-pacer.js';
import { SUPERSEDED_WINDOW_MS } from './answers/answer-rules.js';
import { UnauthorizedFlow } from './answers/unauthorized-flow.js';
import { requestKeyFunction } from './answers/request-key.js';
import { TokenSource, type RetryAnswer } from './token-source.js';
import type { GentokenSlots } from './pacing/gentoken-slots.js';
import { FleetSource, type FleetOptions } from './fleet-source.js';
import type { TokenAcquisition } from './token-acquisition.js';

/** Outcome of one gentoken attempt, for the refresh counter. */
import type { RefreshResult } from '../observability/metrics.js';
export type { RefreshResult, GentokenCause, GentokenTrigger, TokenSnapshot };

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
  /**
   * Draw the first renewal from the token's whole renewal delay instead of its last 10 %: for one of
   * several credential sets started together (renewal-loop.ts), so their renewals do not fall in
   * the same seconds; default false (one set renews exactly as documented).
   */
  spreadFirstRenewal?: boolean;
  /** The names (lower-case) `token.attach` puts in the query: left out of the keys 401s are judged by (request-key.ts). */
  attachQueryNames?: readonly string[];
  /** The credential set this manager obtains tokens for (config/credential-sets.ts); `default` for the object form of `credentials`. */
  credentialId?: string;
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
  /**
   * Shared by the managers of every credential set (`token.maxConcurrentGentoken`): their gentoken
   * calls go a few at a time (gentoken-slots.ts). Omitted: this manager's calls never wait for one.
   */
  slots?: GentokenSlots;
  /**
   * A store several sidecars on one ApiKey share the token through (`fleet.store`, docs/fleet.md):
   * the fleet source (fleet-source.ts) is built around the local one. Absent: today's local source alone.
   */
  fleet?: FleetOptions;
  options: TokenManagerOptions;
}

const READY = Object.freeze({ ready: true });
const LIVE = Object.freeze({ live: true });
const DEFAULT_MAX_RETRY_AFTER_SECONDS = 600;

/**
 * The composition of the parts, each testable alone: the token state (token-state.ts: the token,
 * the last failure, the superseded record); the token source (token-source.ts: the one single
 * flight of gentoken attempts, the only place a call starts); the renewal loop (renewal-loop.ts:
 * when the next attempt goes, with the pacer's budget and retry schedules and the loop timer, and
 * whether the loop is alive); the service's answers (unauthorized-flow.ts: the answer rules'
 * verdicts acted on, a 401 renewed and replayed, answer-signals.ts saying so); failure-reasons.ts
 * words what went wrong; token-view.ts is what the rest of the sidecar reads (the token's part of
 * the one status). The manager wires them and is the face the rest of the sidecar calls.
 *
 * Owns the token's lifecycle: obtains it at start, renews it at `renewAt` of its lifetime, retries
 * failures with backoff, and hands it to the proxy, every gentoken call through the source.
 */
export class TokenManager implements TokenView {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #file: TokenFileWriter | undefined;
  /** The one owner of gentoken calls: single flight, gate, outcome (token-source.ts). */
  readonly #source: TokenSource;
  /** The fleet source around it when a store is shared (fleet-source.ts); everyone asks `#acquisition`. */
  readonly #fleet: FleetSource | undefined;
  readonly #acquisition: TokenAcquisition;
  /** The service's answers: the rules' verdicts acted on, a 401 renewed and replayed (unauthorized-flow.ts). */
  readonly #flow: UnauthorizedFlow;
  /** The renewal loop: timers, backoff, budget, liveness (renewal-loop.ts). */
  readonly #loop: RenewalLoop;
  /** The token held, the last failure, the superseded record (token-state.ts). */
  readonly #state = new TokenState();
  #started = false;
  #stopped = false;

  constructor(deps: TokenManagerDeps) {
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    const random = deps.random ?? Math.random;
    const clamped = () => Math.min(Math.max(random(), 0), 1);
    this.#file = deps.options.file ? createTokenFileWriter(deps.options.file, deps.logger) : undefined;
    this.#loop = new RenewalLoop({
      clock: deps.clock, logger: deps.logger, random: clamped,
      ...(deps.onDeferred ? { onDeferred: deps.onDeferred } : {}),
      options: {
        renewAt: deps.options.renewAt, maxLifetimeSeconds: deps.options.maxLifetimeSeconds, tokenTimeoutMs: deps.options.tokenTimeoutMs,
        ...(deps.options.maxGentokenPerMinute !== undefined ? { maxGentokenPerMinute: deps.options.maxGentokenPerMinute } : {}),
        maxRetryAfterSeconds: deps.options.maxRetryAfterSeconds ?? DEFAULT_MAX_RETRY_AFTER_SECONDS,
        ...(deps.options.startJitterSeconds !== undefined ? { startJitterSeconds: deps.options.startJitterSeconds } : {}),
        ...(deps.options.spreadFirstRenewal ? { spreadFirstRenewal: true } : {}),
      },
    });
    const fleetOptions = deps.fleet;
    this.#source = new TokenSource({
      ...(fleetOptions ? { kick: (trigger: PacedTrigger) => void this.#acquisition.acquire(trigger).catch(() => undefined) } : {}),
      client: deps.client, credentials: deps.credentials, clock: deps.clock, logger: deps.logger, secrets: deps.secrets,
      state: this.#state, loop: this.#loop,
      maxLifetimeSeconds: deps.options.maxLifetimeSeconds, tokenTimeoutMs: deps.options.tokenTimeoutMs,
      onObtained: (token, trigger, sentAt) => {
        this.#flow.obtained(token, trigger, sentAt);
        if (!this.#stopped) void this.#file?.write(token.value);
      },
      ...(deps.onRefresh ? { onRefresh: deps.onRefresh } : {}),
      ...(deps.onFailure ? { onFailure: deps.onFailure } : {}),
      ...(deps.slots ? { slots: deps.slots } : {}),
    });
    this.#fleet = fleetOptions ? new FleetSource({
      local: this.#source, state: this.#state, loop: this.#loop, clock: deps.clock, logger: deps.logger, secrets: deps.secrets,
      credentials: deps.credentials, maxLifetimeSeconds: deps.options.maxLifetimeSeconds, renewAt: deps.options.renewAt, random: clamped,
      onAdopted: (token, trigger, at) => {
        this.#flow.obtained(token, trigger, at);
        if (!this.#stopped) void this.#file?.write(token.value);
      },
      options: { credentialId: deps.options.credentialId, ...fleetOptions },
    }) : undefined;
    this.#acquisition = this.#fleet ?? this.#source;
    this.#flow = new UnauthorizedFlow({
      clock: deps.clock, logger: deps.logger, state: this.#state, source: this.#acquisition, tokenTimeoutMs: deps.options.tokenTimeoutMs,
      ...(deps.configPath !== undefined ? { configPath: deps.configPath } : {}),
      ...(deps.onSuperseded ? { onSuperseded: deps.onSuperseded } : {}),
      keyOf: requestKeyFunction(new Set(deps.options.attachQueryNames ?? [])),
    });
  }

  /** Requests the first token now. Never throws: failures are logged and retried. */
  start(): void {
    if (this.#started || this.#stopped) return;
    this.#started = true;
    (this.#fleet ?? this.#source).start();
  }

  /**
   * Cancels timers; a request in flight finishes but schedules nothing; `token.file` is deleted
   * once its writes are done (the token does not outlive the process). Idempotent.
   */
  async stop(): Promise<void> {
    const first = !this.#stopped;
    this.#stopped = true;
    this.#loop.stop();
    this.#flow.stop();
    await this.#fleet?.stop();
    await (first ? this.#file?.remove() : this.#file?.flush());
  }

  /** The hot path: the token if it is valid, outside the expiry margin and not marked bad. */
  current(): TokenSnapshot | undefined {
    return this.#state.usable(this.#clock.now());
  }

  /** The token synchronously when valid; else waits for an in-flight refresh; else rejects with the reason. */
  acquire(): TokenSnapshot | Promise<TokenSnapshot> {
    const token = this.current();
    if (token) return token;
    // An attempt held back by the budget or a Retry-After may wait far longer than a request should.
    const inflight = this.#acquisition.inflight();
    if (inflight && !inflight.held) return this.#acquisition.bounded(inflight.attempt);
    return Promise.reject(new TokenUnavailableError(this.#reason()));
  }

  /**
   * The service answered 401 to a request `method` `path` that carried `generation` (its first
   * attempt, not a replay). Resolves with a newer token to replay with, or undefined: pass the 401
   * back. The answer rules (answer-rules.ts) judge it by method, path and query: a key whose 401s
   * are its own is passed back at once; a key that worked gets one renewal (single flight, at most
   * one per interval) and a replay; a key never seen to work, the same within the judgements' own
   * interval and share of the budget. A renewal
   * the budget or a Retry-After holds back is not waited for: the 401 goes back and the current
   * token stays in use (the service decides about it, not a deferred renewal).
   */
  invalidate(generation: number, path = '/', method = 'GET'): Promise<TokenSnapshot | undefined> {
    return this.#flow.invalidate(generation, path, method);
  }

  /**
   * A request `method` carrying `generation` was answered `status` on `path` (anything but a first
   * 401; a replay's answer names the generation it replaced in `replayOf`). On the request path: a
   * couple of comparisons when nothing is pending (the key is made only at the first success of a
   * token and while a judgement is watched).
   */
  answered(generation: number, status: number, path: string, replayOf?: number, method = 'GET'): void {
    this.#flow.answered(generation, status, path, replayOf, method);
  }

  /** The renewal after a 401 on `method` `path` gave `fresh`, but the request was not sent again (unauthorized-flow.ts). */
  unreplayed(fresh: number, path: string, method = 'GET'): void {
    this.#flow.unreplayed(fresh, path, method);
  }

  /** Non-fatal conditions `/readyz` reports beside its verdict (a new array each call). */
  warnings(): string[] {
    return this.#flow.warnings();
  }

  /** Credentials changed: obtain a token with the new ones; if rejected, keep the old token. Never rejects. */
  async rotate(): Promise<void> {
    if (!this.#started || this.#stopped) return;
    // A request in flight carries the old credentials; the new ones need a request of their own.
    await this.#acquisition.inflight()?.attempt.catch(() => undefined);
    if (this.#stopped) return;
    await this.#acquisition.acquire('rotation').catch(() => {
      if (this.#state.failure?.cause !== 'unauthorized') return;
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

  /**
   * SIGHUP with unchanged credential files: the operator says something changed elsewhere (the
   * vendor unblocked the key, fixed its allow list, or accepted the client certificate). When no
   * valid token is held, or the last attempt was refused (a lockout-safe failure), one attempt goes
   * out now instead of waiting for the schedule; still within token.maxGentokenPerMinute and any
   * Retry-After, and never sooner than the lockout-safe schedule's first step (5 s) after the last
   * call, so signals cannot make gentoken calls faster than that schedule would. Returns what was
   * done, for the SIGHUP log line.
   */
  retryNow(): RetryAnswer | 'not running' {
    if (!this.#started || this.#stopped) return 'not running';
    return this.#source.retryNow();
  }

  /** Readiness: ready while current() returns a token, else the reason clients are told. */
  status(): { ready: boolean; reason?: string } {
    return this.current() ? READY : { ready: false, reason: this.#reason() };
  }

  /** Why no token is usable: the fleet store when it is the reason (onStoreDown: wait), else the token source's words. */
  #reason(): string {
    return this.#fleet?.reason() ?? this.#source.reason();
  }

  /**
   * Liveness (`/healthz`, and the systemd watchdog): false only when the token loop itself is dead
   * or stuck: no attempt on the wire and none scheduled, a scheduled attempt overdue, a request far
   * past its deadline, or an attempt scheduled further ahead than any setting allows. A vendor that
   * is down or rejects the credentials is readiness (`status()`), never liveness.
   */
  liveness(): { live: boolean; reason?: string } {
    if (!this.#started || this.#stopped) return LIVE;
    return this.#loop.liveness();
  }

  /** The token's part of the one status (token-view.ts). */
  view(): TokenStatus {
    const failure = this.#state.failure;
    return tokenStatus({
      readiness: this.status(),
      liveness: this.liveness(),
      token: this.#state.token,
      failure,
      failureMessage: failure ? this.#reason() : undefined,
      superseded: this.#state.superseded,
      supersededWindowMs: SUPERSEDED_WINDOW_MS,
      suspect: this.#flow.suspect(),
      warnings: this.warnings(),
      nextAttemptWall: this.#loop.nextAttemptWall(),
      now: this.#clock.now(),
      wallNow: this.#clock.wallNow(),
      ...(this.#fleet ? { fleet: this.#fleet.status() } : {}),
    });
  }
}


function round(n: number): number {
  return Math.round(n * 10) / 10;
}
