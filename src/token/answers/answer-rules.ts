import { pathKey, PathMemory } from './path-memory.js';
import { requestKeyFunction, type RequestKey } from './request-key.js';

/**
 * What the service's answers say about the token and about `token.attach`, judged from the
 * token's whole record and per path. No timers, no I/O: the token manager feeds it every answer
 * and acts on its verdicts; time is read from the injected `now` only on the rare paths (a 401,
 * a judgement), never for an ordinary answer. The rules (docs/design.md, "Reading the answers"):
 *
 * - Requests are told apart by what the service judges: method, path and normalised query
 *   (request-key.ts). Two bounded memories hold keys: those whose 401 is their own (below) and
 *   those that have **worked** (succeeded, with this token or an earlier one; recorded at the first
 *   success of each token and at every success while a judgement is watched, so an ordinary answer
 *   still costs two comparisons).
 * - **A first 401 on a key that worked** is a revocation: renew once (single flight) and replay,
 *   whatever else the memories hold, on the revocations' own interval and budget.
 * - **A first 401 on a key never seen to work** (once any request has succeeded) asks for a
 *   judgement: a renewal and a replay, at most one per judgement interval
 *   ({@link MIN_RENEW_INTERVAL_MS}, doubling after each judgement that found the key's own 401, up
 *   to {@link MAX_RENEW_INTERVAL_MS}, starting over when a renewal helped) and within half the
 *   budget (gentoken-pacer.ts: the other half stays for revocations); outside it the 401 is
 *   passed back (or waits for a renewal already on its way). Judgements never move the
 *   revocations' interval nor make `token.attach` suspect.
 * - **The fresh token refused on that key too** while tokens are accepted elsewhere: the 401 is
 *   the key's own answer (an object the key may not see). The key is remembered
 *   ({@link PATH_MEMORY_SIZE} keys, {@link PATH_MEMORY_MS}) and, once the fresh token is seen to
 *   succeed elsewhere afterwards, its 401s are passed straight back: no renewal, no replay, no
 *   signal, until the memory expires or the key succeeds.
 * - **Fresh tokens refused on two distinct paths with no success anywhere**: evidence against the
 *   token or the attachment (attach suspect), not against the paths.
 * - **No success at all**: {@link ATTACH_EVIDENCE_ANSWERS} answers that say "not this way" (a 3xx
 *   other than 304, a 4xx other than 408 and 429) on at least two distinct paths, with tokens no
 *   request has succeeded with: attach suspect too (vendors answering a missing token with 400,
 *   a redirect to a login page, 403 or 404). Once any request has succeeded (the attachment has
 *   been seen to work), refusals are never evidence; 5xx and 429 say nothing about the token.
 * - Attach suspect clears at the first success (2xx or 304).
 * - **Superseded** (another holder of the key): a token that had succeeded is rejected while
 *   young, and the renewal helps (the replay on the same path succeeds). Counted once per token;
 *   a path's own 401 (the replay refused too) never counts.
 * - Revocations' renewals that did not help (the replay was refused too, nothing succeeding)
 *   space the next ones out: 1 s, 2 s, 4 s … {@link MAX_RENEW_INTERVAL_MS}; one that helped starts
 *   over at 1 s. A path's own 401 does not count: it says nothing about the next revocation.
 */

/** A success: 2xx, or 304 (a cache revalidated with the token). */
export function isSuccess(status: number): boolean {
  return (status >= 200 && status < 300) || status === 304;
}

/** An answer that, when nothing succeeds, says "not this way": 3xx but 304, 4xx but 408 and 429. */
export function isRefusal(status: number): boolean {
  return status >= 300 && status < 500 && status !== 304 && status !== 408 && status !== 429;
}

/** Answers without a success, on at least two distinct paths, before `token.attach` is suspected. */
export const ATTACH_EVIDENCE_ANSWERS = 10;
/** Keys remembered as answering 401 for their own reasons, and for how long. */
export const PATH_MEMORY_SIZE = 128;
export const PATH_MEMORY_MS = 10 * 60_000;
/** Keys remembered as having worked, and for how long (a 401 there is a revocation). */
export const WORKED_MEMORY_SIZE = 256;
export const WORKED_MEMORY_MS = 60 * 60_000;
/** 401-triggered renewals of each kind (revocation, judgement) are at least this far apart, doubling after each that did not help. */
export const MIN_RENEW_INTERVAL_MS = 1_000;
export const MAX_RENEW_INTERVAL_MS = 60_000;
/** Superseded rejections within the window that point at another holder of the key. */
export const SUPERSEDED_THRESHOLD = 3;
export const SUPERSEDED_WINDOW_MS = 10 * 60_000;
/** "Young": rejected before this fraction of its lifetime, long before any expiry. */
const YOUNG_FRACTION = 0.5;

/** The token a first 401 rejected, as the manager saw it then. */
export interface RejectedToken {
  generation: number;
  /** Monotonic ms the gentoken request was sent. */
  obtainedAt: number;
  lifetimeSeconds: number;
  /** True when a request had succeeded with it before the 401. */
  proven: boolean;
}

/** Which evidence made `token.attach` suspect. */
export type SuspectForm =
  /** Fresh tokens refused with 401 on two or more paths, nothing succeeding. */
  | 'unauthorized'
  /** Only refusals (400, 3xx, 403, 404 …) on two or more paths, nothing succeeding. */
  | 'answers';

export type UnauthorizedVerdict =
  /** A revocation (the key worked, or nothing has worked yet): renew once and replay (a request may wait briefly for a renewal the interval defers). */
  | 'renew'
  /** A key never seen to work: renew and replay if the judgement interval allows it now. */
  | 'judge'
  /** This key refused a fresh token before: a judgement too, renewed only if the judgement interval allows it now. */
  | 'renew-if-due'
  /** The path's own 401: pass it back, no renewal, no signal. `newly` the first time after the judgement. */
  | 'remembered'
  | 'newly-remembered'
  /** `token.attach` is suspect: pass back unless a (slowed) renewal is due. */
  | 'suspect';

export type ReplayVerdict =
  /** The renewal helped (or the answer says nothing): the old token was revoked. */
  | { kind: 'revoked' }
  /** The renewal helped and the rejected token was young and had succeeded: another holder? */
  | { kind: 'superseded'; count: number; tripped: boolean }
  /** The fresh token refused on this path too while tokens succeed elsewhere: remembered. */
  | { kind: 'path-own'; path: string }
  /** The fresh token refused and nothing succeeds anywhere: evidence against token.attach. */
  | { kind: 'refused'; path: string };

interface Remembered {
  /** The fresh token the path refused. */
  generation: number;
  /** Successes counted when it refused: a later success with that token is on another path. */
  seq: number;
  /** True when that token had already succeeded when the path refused it (order unknown). */
  provenBefore: boolean;
  confirmed: boolean;
}

export class AnswerRules {
  readonly #now: () => number;
  readonly #keyOf: RequestKey;
  /** Highest generation a request succeeded with. */
  #succeededUpTo = 0;
  /** A cheap order of successes: how many, and the generation of the latest. */
  #successSeq = 0;
  #lastSuccessGeneration = 0;
  /** True while anything besides #succeededUpTo needs a success to see (evidence, remembered paths, suspect). */
  #watching = false;
  readonly #paths = new PathMemory<Remembered>(PATH_MEMORY_SIZE, PATH_MEMORY_MS);
  /** Keys that have worked, with the generation they last succeeded with. */
  readonly #worked = new PathMemory<number>(WORKED_MEMORY_SIZE, WORKED_MEMORY_MS);
  /** Judgements in a row that found a key's own 401 (the judgement interval doubles with each). */
  #judgeStreak = 0;
  #evidenceAnswers = 0;
  #evidencePath: string | undefined;
  #evidenceTwoPaths = false;
  #lastRefusalStatus = 0;
  /** The first path a fresh token was refused on while nothing succeeds, and that token. */
  #refusedPath: string | undefined;
  #refusedGeneration = 0;
  #suspect: SuspectForm | undefined;
  #suspectPath: string | undefined;
  /** 401-triggered renewals in a row whose replay was refused too. */
  #unhelpful = 0;
  #superseded: number[] = [];
  #supersededWarned = false;
  #judgedUpTo = 0;

  constructor(now: () => number, keyOf: RequestKey = requestKeyFunction(new Set())) {
    this.#now = now;
    this.#keyOf = keyOf;
  }

  /** The key the memories hold `method` `path` by. */
  keyOf(method: string, path: string): string {
    return this.#keyOf(method, path);
  }

  /**
   * Any answer to a request that carried `generation`, replays included (a first 401 goes to
   * {@link unauthorized} instead). On the request path: two comparisons when nothing is pending.
   * Returns 'cleared' or 'suspect' when the attach-suspect state changes.
   */
  answered(generation: number, status: number, path: string, method = 'GET'): 'cleared' | 'suspect' | undefined {
    if ((status >= 200 && status < 300) || status === 304) {
      this.#successSeq++;
      this.#lastSuccessGeneration = generation;
      if (generation <= this.#succeededUpTo && !this.#watching) return undefined;
      return this.#succeeded(generation, path, method);
    }
    // Once any request has succeeded, token.attach has been seen to work: refusals after that are
    // the app's business (objects that do not exist), not evidence against the attachment.
    if (this.#succeededUpTo > 0 || this.#suspect !== undefined || !isRefusal(status)) return undefined;
    return this.#refusal(status, path);
  }

  /** A first 401 (not a replay's) on `method` `path` for a request that carried `generation`. */
  unauthorized(generation: number, path: string, method = 'GET'): UnauthorizedVerdict {
    const now = this.#now();
    const key = this.#keyOf(method, path);
    const entry = this.#paths.get(key, now);
    if (entry !== undefined) {
      if (entry.confirmed) return 'remembered';
      // A success with the refused token (or a later one) after the refusal: if that token had not
      // succeeded before, any success with it counts; otherwise the latest success must be it.
      const sinceRefusal = (!entry.provenBefore && this.#succeededUpTo >= entry.generation)
        || (this.#successSeq > entry.seq && this.#lastSuccessGeneration >= entry.generation);
      if (sinceRefusal) {
        // The token this path refused succeeded since, elsewhere (a success here would have
        // removed the entry): the path's own answer.
        entry.confirmed = true;
        return 'newly-remembered';
      }
    }
    // A fresh token already refused on another path, nothing succeeding since: a second path.
    const bare = pathKey(path);
    if (this.#suspect === undefined && this.#refusedPath !== undefined && bare !== this.#refusedPath && generation >= this.#refusedGeneration) {
      this.#enterSuspect('unauthorized', bare);
    }
    if (this.#suspect !== undefined) return 'suspect';
    if (entry !== undefined) return 'renew-if-due';
    // Until anything has worked, every 401 is evidence about the token or token.attach.
    if (this.#succeededUpTo === 0) return 'renew';
    return this.#worked.get(key, now) !== undefined ? 'renew' : 'judge';
  }

  /** The replay after a first 401 on `path` (rejecting `rejected`) was answered `status` with `fresh`. */
  replayed(rejected: RejectedToken, fresh: number, status: number, path: string, method = 'GET'): ReplayVerdict {
    const now = this.#now();
    if (status === 401) {
      const key = this.#keyOf(method, path);
      const bare = pathKey(path);
      // A key never seen to work, once anything has: the renewal was a judgement.
      const judged = this.#succeededUpTo > 0 && this.#worked.get(key, now) === undefined;
      // This key refused a fresh token before, while tokens have worked: refusing the next fresh
      // one (which had no chance to succeed elsewhere yet) is the same answer, not new evidence.
      const known = this.#succeededUpTo > 0 && this.#paths.get(key, now) !== undefined;
      this.#paths.set(key, { generation: fresh, seq: this.#successSeq, provenBefore: this.#succeededUpTo >= fresh, confirmed: false }, now);
      this.#worked.delete(key);
      this.#watching = true;
      // A key's own 401 says nothing about the next revocation: it must not slow the renewals
      // every other client's 401s then need; it slows the next judgement only.
      if (judged) {
        this.#judgeStreak++;
        return { kind: 'path-own', path: bare };
      }
      if (known || rejected.proven || this.#succeededUpTo >= rejected.generation) return { kind: 'path-own', path: bare };
      this.#unhelpful++;
      if (this.#refusedPath !== undefined && this.#refusedPath !== bare) this.#enterSuspect('unauthorized', bare);
      else {
        this.#refusedPath = bare;
        this.#refusedGeneration = fresh;
      }
      return { kind: 'refused', path: bare };
    }
    if (!isSuccess(status)) return { kind: 'revoked' };
    // The renewal helped: a revocation, whichever kind of 401 asked for it.
    this.#unhelpful = 0;
    this.#judgeStreak = 0;
    const young = now - rejected.obtainedAt < rejected.lifetimeSeconds * 1000 * YOUNG_FRACTION;
    if (!rejected.proven || !young || rejected.generation <= this.#judgedUpTo) return { kind: 'revoked' };
    this.#judgedUpTo = rejected.generation;
    this.#superseded = this.#superseded.filter((t) => now - t < SUPERSEDED_WINDOW_MS);
    this.#superseded.push(now);
    const count = this.#superseded.length;
    const holds = count >= SUPERSEDED_THRESHOLD;
    const tripped = holds && !this.#supersededWarned;
    // Warned once per episode: the rule must stop holding (a quiet window) before it warns again.
    this.#supersededWarned = holds;
    return { kind: 'superseded', count, tripped };
  }

  /**
   * A fresh token refused on `path` where no replay could tell (a streamed request): when that
   * token has succeeded elsewhere, the path's own answer at once. True when it was so judged.
   */
  confirmIfProven(path: string, fresh: number, method = 'GET'): boolean {
    const entry = this.#paths.get(this.#keyOf(method, path), this.#now());
    if (entry === undefined || entry.generation !== fresh || this.#succeededUpTo < fresh) return false;
    entry.confirmed = true;
    return true;
  }

  /** True once any request has succeeded: token.attach has been seen to work. */
  get anythingWorked(): boolean {
    return this.#succeededUpTo > 0;
  }

  /** True when a request succeeded with `generation` (or a later token). */
  proven(generation: number): boolean {
    return generation <= this.#succeededUpTo;
  }

  /** The shortest time between two 401-triggered renewals now. */
  get renewIntervalMs(): number {
    return Math.min(MIN_RENEW_INTERVAL_MS * 2 ** Math.min(this.#unhelpful, 16), MAX_RENEW_INTERVAL_MS);
  }

  /** The shortest time between two judgements (401-triggered renewals for keys never seen to work) now. */
  get judgeIntervalMs(): number {
    return Math.min(MIN_RENEW_INTERVAL_MS * 2 ** Math.min(this.#judgeStreak, 16), MAX_RENEW_INTERVAL_MS);
  }

  /** True while no judgement has found a key's own 401 since a renewal last helped: a judgement inside its interval may wait for a deferred one. */
  get judgementsHelp(): boolean {
    return this.#judgeStreak === 0 && this.holdsForRenewal;
  }

  /** True when a 401 inside the interval may wait for the deferred renewal (nothing suggests it will not help). */
  get holdsForRenewal(): boolean {
    return this.#unhelpful === 0 && this.#suspect === undefined;
  }

  /** Set while `token.attach` is suspect, with the evidence that made it so. */
  get suspect(): SuspectForm | undefined {
    return this.#suspect;
  }

  /** The path the suspicion was last confirmed on (for the doctor command). */
  get suspectPath(): string | undefined {
    return this.#suspectPath;
  }

  /** What the "answers" evidence holds: answers counted and the status of the last one. */
  get evidence(): { answers: number; lastStatus: number } {
    return { answers: this.#evidenceAnswers, lastStatus: this.#lastRefusalStatus };
  }

  /** Keys held in the memory of own 401s (expired ones included until pruned). */
  get rememberedPaths(): number {
    return this.#paths.size;
  }

  /** Keys held in the memory of keys that worked (expired ones included until pruned). */
  get workedKeys(): number {
    return this.#worked.size;
  }

  /** Reached at the first success of each token and, while watching, at every success. */
  #succeeded(generation: number, path: string, method: string): 'cleared' | undefined {
    if (generation > this.#succeededUpTo) this.#succeededUpTo = generation;
    const cleared = this.#suspect !== undefined;
    this.#suspect = undefined;
    this.#suspectPath = undefined;
    this.#evidenceAnswers = 0;
    this.#evidencePath = undefined;
    this.#evidenceTwoPaths = false;
    this.#refusedPath = undefined;
    this.#refusedGeneration = 0;
    const key = this.#keyOf(method, path);
    const now = this.#now();
    if (this.#paths.size > 0) {
      this.#paths.delete(key);
      this.#paths.prune(now);
    }
    this.#worked.set(key, generation, now);
    this.#watching = this.#paths.size > 0;
    return cleared ? 'cleared' : undefined;
  }

  #refusal(status: number, path: string): 'suspect' | undefined {
    this.#watching = true;
    this.#evidenceAnswers++;
    this.#lastRefusalStatus = status;
    const key = pathKey(path);
    if (this.#evidencePath === undefined) this.#evidencePath = key;
    else if (key !== this.#evidencePath) this.#evidenceTwoPaths = true;
    if (this.#evidenceAnswers < ATTACH_EVIDENCE_ANSWERS || !this.#evidenceTwoPaths) return undefined;
    this.#enterSuspect('answers', key);
    return 'suspect';
  }

  #enterSuspect(form: SuspectForm, path: string): void {
    this.#suspect = form;
    this.#suspectPath = path;
    this.#watching = true;
  }
}
