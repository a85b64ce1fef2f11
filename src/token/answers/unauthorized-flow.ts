import type { Logger } from '../../observability/logger.js';
import type { Clock } from '../../shared/clock.js';
import { AnswerRules, PATH_MEMORY_MS, SUPERSEDED_THRESHOLD, type RejectedToken, type SuspectForm } from './answer-rules.js';
import { AnswerSignals, shortPath } from './answer-signals.js';
import type { RequestKey } from './request-key.js';
import type { TokenAcquisition } from '../token-acquisition.js';
import type { TokenSnapshot, TokenState } from '../token-state.js';

export interface UnauthorizedFlowDeps {
  clock: Clock;
  logger: Logger;
  state: TokenState;
  /** Where the tokens come from: the one single flight of gentoken calls and its pace (token-source.ts). */
  source: TokenAcquisition;
  /** The longest wait for a gentoken call once it goes out (`service.tokenTimeoutMs`). */
  tokenTimeoutMs: number;
  /** The config file the process runs with, for the doctor command a hint prints. */
  configPath?: string;
  /** Called for each young token that had succeeded, was rejected and replaced by a renewal that helped. */
  onSuperseded?: () => void;
  /** The key a request is judged by (request-key.ts); method + path + query without token.attach's parameters by default. */
  keyOf?: RequestKey;
}

const PASS: Promise<undefined> = Promise.resolve(undefined);
/**
 * A 401 whose renewal the budget holds back waits for the token's scheduled renewal (never held
 * back) when it falls due within this long, and is replayed with its token: under revocations,
 * short-lived tokens then cost clients no 401 and the service no extra call (docs/design.md,
 * "Reading the answers").
 */
const SCHEDULED_RENEWAL_WAIT_MS = 2_000;

/**
 * What the sidecar does with the service's answers: feeds them to the answer rules
 * (answer-rules.ts), acts on their verdicts (a 401 renewed once and replayed, or passed back; a
 * replay's answer judged; attach suspect and superseded recorded) and has answer-signals.ts say so.
 * The gentoken call itself is the token source's single flight (`TokenAcquisition`).
 */
export class UnauthorizedFlow {
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #state: TokenState;
  readonly #source: TokenAcquisition;
  readonly #tokenTimeoutMs: number;
  readonly #onSuperseded: (() => void) | undefined;
  /** What the service's answers say (answer-rules.ts). */
  readonly #rules: AnswerRules;
  /** The log lines and warning texts of the rules' verdicts (answer-signals.ts). */
  readonly #signals: AnswerSignals;
  #deferred: Promise<TokenSnapshot | undefined> | undefined;
  #deferredJudgement: Promise<TokenSnapshot | undefined> | undefined;
  /** 401s waiting for the scheduled renewal: each takes the first token whose call went out after it arrived. */
  #renewalWaiters: Array<{ since: number; settle: (token: TokenSnapshot | undefined) => void }> = [];
  #mintedAfter401: TokenSnapshot | undefined;
  /** The token the last 401-triggered renewal replaces, for judging the replays' answers. */
  #rejected: RejectedToken | undefined;
  /** When the last revocation-class and judgement renewals went out: each kind has its own interval. */
  #lastInvalidateAt = -Infinity;
  #lastJudgedAt = -Infinity;
  /** A renewal whose request was not sent again: the next 401 on that path with its token stands in for the replay. */
  #unreplayed: { key: string; fresh: number; rejected: RejectedToken } | undefined;
  #stopped = false;

  constructor(deps: UnauthorizedFlowDeps) {
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#state = deps.state;
    this.#source = deps.source;
    this.#tokenTimeoutMs = deps.tokenTimeoutMs;
    this.#onSuperseded = deps.onSuperseded;
    this.#rules = new AnswerRules(() => this.#clock.now(), deps.keyOf);
    this.#signals = new AnswerSignals(deps.logger, deps.configPath);
  }

  /** A token arrived from an attempt started by `trigger` whose call went out at `sentAt` (monotonic ms). */
  obtained(token: TokenSnapshot, trigger: string, sentAt: number): void {
    if (trigger === 'upstream 401') this.#mintedAfter401 = token;
    if (this.#renewalWaiters.length) {
      const waiting = this.#renewalWaiters;
      this.#renewalWaiters = waiting.filter((w) => w.since > sentAt);
      for (const waiter of waiting) if (waiter.since <= sentAt) waiter.settle(token);
    }
  }

  /** The manager stops: 401s waiting for the scheduled renewal are passed back. */
  stop(): void {
    this.#stopped = true;
    for (const waiter of this.#renewalWaiters.splice(0)) waiter.settle(undefined);
  }

  /** See TokenManager.invalidate(). */
  invalidate(generation: number, path: string, method = 'GET'): Promise<TokenSnapshot | undefined> {
    if (this.#stopped) return PASS;
    const pending = this.#unreplayed;
    if (pending !== undefined && pending.fresh === generation && pending.key === this.#rules.keyOf(method, path)) {
      // The fresh token refused on the path whose streamed request it was renewed for: the answer
      // a replay would have given, judged as one (uploads must not renew on every 401 of a path
      // that answers 401 for its own reasons).
      this.#unreplayed = undefined;
      this.#rejected = pending.rejected;
      this.#replayAnswered(pending.rejected.generation, generation, 401, path, method);
      if (this.#rules.confirmIfProven(path, generation, method)) this.#signals.pathRemembered(path, method, PATH_MEMORY_MS / 60_000);
    }
    const token = this.#state.token;
    const before = this.#rules.suspect;
    const verdict = this.#rules.unauthorized(generation, path, method);
    if (verdict === 'newly-remembered') {
      this.#signals.pathRemembered(path, method, PATH_MEMORY_MS / 60_000);
    }
    if (verdict === 'remembered' || verdict === 'newly-remembered') return PASS;
    if (before === undefined && this.#rules.suspect !== undefined) this.#suspectEntered(this.#rules.suspect, path);
    // A newer token is safe to reuse only if it was minted because of a 401: it then postdates
    // the revocation. One from a routine renewal may predate the revocation that rejected the
    // older token, and would be rejected as well (seen in the soak benchmark).
    if (token && token.generation > generation && this.#mintedAfter401 === token) return this.#newer(generation);
    const inflight = this.#source.inflight();
    // An attempt held back (a rotation or retry waiting for the budget) may wait far longer than a request should.
    if (inflight?.held) return this.#newer(generation);
    if (inflight) return this.#source.bounded(inflight.attempt).then((t) => (t.generation > generation ? t : undefined));
    // A failing auth server is already retried on its backoff; request traffic must not add calls.
    if (this.#state.failure !== undefined) return this.#newer(generation);
    const now = this.#clock.now();
    // Until anything has worked, a key that refused a fresh token is evidence about the token or
    // token.attach, slowed down on the revocations' interval as before.
    if (verdict === 'judge' || (verdict === 'renew-if-due' && this.#rules.anythingWorked)) return this.#judge(generation, path, method, verdict, now);
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
          this.invalidate(generation, path, method).then(resolve, reject);
        }, wait);
      });
      return this.#deferred;
    }
    if (!this.#source.mayCall('upstream 401', now)) return this.#scheduledRenewal(generation, now);
    this.#lastInvalidateAt = now;
    return this.#renew(generation);
  }

  /**
   * A 401 on a key never seen to work (or one that refused a fresh token, not yet confirmed): a
   * judgement, on its own interval and within the budget's share for judgements, so that a client
   * walking refused keys can spend neither the budget nor the interval a revocation needs.
   * Outside it the 401 goes back at once: a revocation is healed through the keys that worked.
   */
  #judge(generation: number, path: string, method: string, verdict: 'judge' | 'renew-if-due', now: number): Promise<TokenSnapshot | undefined> {
    const wait = this.#lastJudgedAt + this.#rules.judgeIntervalMs - now;
    if (wait > 0) {
      // As for revocations: while no judgement has found a key's own 401, one renewal is deferred
      // to the end of the window and the 401s meanwhile wait for it (a storm on keys not yet seen).
      if (verdict !== 'judge' || !this.#rules.judgementsHelp) return this.#newer(generation);
      this.#deferredJudgement ??= new Promise<TokenSnapshot | undefined>((resolve, reject) => {
        this.#clock.setTimeout(() => {
          this.#deferredJudgement = undefined;
          this.invalidate(generation, path, method).then(resolve, reject);
        }, wait);
      });
      return this.#deferredJudgement;
    }
    // While the judgements keep finding revocations (none has found a key's own 401 since a renewal
    // last helped), a judgement is a revocation's renewal and may use the whole budget: revocations
    // met on new keys (every client's first request after one) must heal. Once one found a key's own
    // 401 (a walk), judgements keep to their share, leaving half of the budget to revocations.
    const allowed = this.#rules.judgementsHelp ? this.#source.mayCall('upstream 401', now) : this.#source.mayCall('judgement', now);
    // Beyond that: as a revocation's 401 held back by the budget.
    if (!allowed) return this.#scheduledRenewal(generation, now);
    this.#lastJudgedAt = now;
    return this.#renew(generation);
  }

  /** The single-flight renewal a 401 asked for, the rejected token held back while it is on the wire. */
  #renew(generation: number): Promise<TokenSnapshot | undefined> {
    const token = this.#state.token;
    const rejectedCurrent = token !== undefined && token.generation === generation;
    if (rejectedCurrent) {
      // Held back from requests only while its renewal is on the wire: milliseconds.
      this.#state.markBad();
      this.#rejected = { generation, obtainedAt: token.obtainedAt, lifetimeSeconds: token.lifetimeSeconds, proven: this.#rules.proven(generation) };
    }
    this.#logger.warn('the service rejected the token; renewing', { fingerprint: token?.fingerprint, generation });
    const refreshed = this.#source.acquire('upstream 401').catch((err: unknown) => {
      // The auth server failed, not necessarily the token: keep serving it while it is valid.
      this.#state.unmarkBad(token);
      throw err;
    });
    return this.#source.bounded(refreshed);
  }

  /** See TokenManager.unreplayed(). */
  unreplayed(fresh: number, path: string, method = 'GET'): void {
    const rejected = this.#rejected;
    if (rejected !== undefined && rejected.generation < fresh) this.#unreplayed = { key: this.#rules.keyOf(method, path), fresh, rejected };
  }

  /** See TokenManager.answered(). */
  answered(generation: number, status: number, path: string, replayOf?: number, method = 'GET'): void {
    if (replayOf !== undefined) return this.#replayAnswered(replayOf, generation, status, path, method);
    const change = this.#rules.answered(generation, status, path, method);
    if (change === 'suspect') this.#suspectEntered('answers', path);
    else if (change === 'cleared') this.#signals.suspectCleared(generation);
  }

  /** The `/readyz` warnings of the answers (a new array each call). */
  warnings(): string[] {
    const form = this.#rules.suspect;
    return form === undefined ? [] : [this.#signals.suspectWarning(form, this.#rules.suspectPath ?? '/')];
  }

  /** While `token.attach` is suspect: the evidence and the path to probe. */
  suspect(): { evidence: SuspectForm; path: string } | undefined {
    const form = this.#rules.suspect;
    return form === undefined ? undefined : { evidence: form, path: shortPath(this.#rules.suspectPath ?? '/') };
  }

  #replayAnswered(replayOf: number, fresh: number, status: number, path: string, method: string): void {
    const before = this.#rules.suspect;
    this.#rules.answered(fresh, status, path, method);
    const pending = this.#rejected;
    const rejected: RejectedToken = pending?.generation === replayOf ? pending : { generation: replayOf, obtainedAt: -Infinity, lifetimeSeconds: 0, proven: false };
    const verdict = this.#rules.replayed(rejected, fresh, status, path, method);
    const after = this.#rules.suspect;
    if (before === undefined && after !== undefined) this.#suspectEntered(after, path);
    else if (before !== undefined && after === undefined) this.#signals.suspectCleared(fresh);
    if (verdict.kind === 'superseded') {
      this.#state.supersededAt(this.#clock.wallNow(), verdict.count, verdict.count >= SUPERSEDED_THRESHOLD);
      this.#onSuperseded?.();
      if (verdict.tripped) this.#signals.supersededTripped(verdict.count);
    } else if (verdict.kind === 'refused' && after === undefined && before === undefined) {
      this.#signals.replayRefused(path, this.#rules.renewIntervalMs);
    } else if (verdict.kind === 'path-own') {
      this.#signals.pathOwn(path, method);
    }
  }

  #suspectEntered(form: SuspectForm, path: string): void {
    this.#signals.suspectEntered(form, this.#rules.suspectPath ?? path, this.#rules.evidence, this.#state.token?.fingerprint);
  }

  /**
   * A 401 whose renewal the budget holds back: when the scheduled renewal falls due within
   * SCHEDULED_RENEWAL_WAIT_MS, wait for its token (a call sent after the 401 arrived postdates the
   * revocation) and replay with it; otherwise pass the 401 back at once.
   */
  #scheduledRenewal(generation: number, now: number): Promise<TokenSnapshot | undefined> {
    const due = this.#source.renewDueAt() - now;
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
      }, Math.max(0, due) + this.#tokenTimeoutMs);
      this.#renewalWaiters.push(waiter);
    });
  }

  /** Resolves with the current token when it is newer than `generation` (to replay with), else undefined. */
  #newer(generation: number): Promise<TokenSnapshot | undefined> {
    const t = this.#source.current();
    return Promise.resolve(t !== undefined && t.generation > generation ? t : undefined);
  }
}
