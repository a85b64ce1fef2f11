import { fleetRecordKey, type FleetRecord } from '../fleet/fleet-record.js';
import { FleetStoreError, type FleetStore, type StoreOperation } from '../fleet/fleet-store.js';
import type { Logger } from '../observability/logger.js';
import type { FleetStatus } from '../observability/status.js';
import type { Clock, TimerHandle } from '../shared/clock.js';
import { TokenUnavailableError } from '../shared/errors.js';
import type { SecretSet } from '../shared/secrets.js';
import type { CredentialStore } from './credential-store.js';
import type { PacedTrigger } from './pacing/gentoken-pacer.js';
import { MIN_RENEW_DELAY_MS, type RenewalLoop } from './pacing/renewal-loop.js';
import type { AnswerCall, InFlight, TokenAcquisition } from './token-acquisition.js';
import type { TokenSource } from './token-source.js';
import type { TokenSnapshot, TokenState } from './token-state.js';

/** What the fleet source reads of `fleet.*` (wired in service/service-part.ts). */
export interface FleetOptions {
  store: FleetStore;
  /** The service's base URL: with the ApiKey's hash, the record's key (fleet-record.ts). */
  baseUrl: string;
  /** Who this process is in the store (host name and pid, or the pod's name). */
  holder: string;
  /** `fleet.onStoreDown`: renew alone near the token's end (`local`), or serve until its end (`wait`). */
  onStoreDown: 'local' | 'wait';
  /** How often the store is read for a peer's newer token, in ms (watch or not). */
  pollIntervalMs: number;
  /** The renewal claim's lifetime, in ms: longer than the gentoken deadline. */
  claimMs: number;
  /**
   * The part of claimMs beyond the gentoken deadline (the reads and the publish around the call),
   * in ms; it is cut to a tenth of the token's lifetime, so a claimant that dies is replaced well
   * inside a short token's remaining life. Default 0: claimMs as given.
   */
  claimMarginMs?: number;
  /** Hosts' clocks may differ by this much, in ms: a shared token is taken to end this much sooner. */
  clockSkewMs: number;
  /** The metric label of this credential set. */
  credentialId?: string;
  /** Metric hooks (observability/metrics.ts); all optional. */
  onClaim?: (result: 'won' | 'lost' | 'error') => void;
  onPublishConflict?: () => void;
  onStoreError?: (operation: StoreOperation) => void;
}

export interface FleetSourceDeps {
  /** The local source: every gentoken call still goes through its single flight, gate and outcome. */
  local: TokenSource;
  state: TokenState;
  loop: RenewalLoop;
  clock: Clock;
  logger: Logger;
  secrets: SecretSet;
  credentials: Pick<CredentialStore, 'current'>;
  maxLifetimeSeconds: number;
  renewAt: number;
  random: () => number;
  /** A token adopted from the store, as the local source's onObtained (401 waiters, the token file). */
  onAdopted: (token: TokenSnapshot, trigger: PacedTrigger, at: number) => void;
  options: FleetOptions;
}

/** At most this share of a shared token's lifetime is given to the clock-skew allowance: short tokens stay usable. */
const MAX_SKEW_FRACTION = 0.25;
/** While a peer holds the claim, the store is read this often for its result (plus the watch). */
const FOLLOW_INTERVAL_MS = 250;
/** ... and the claim is tried again this often, so a lapsed claim is taken over promptly. */
const RECLAIM_INTERVAL_MS = 1_000;

type Source = FleetStatus['source'];

/**
 * The token source of a fleet (docs/fleet.md; docs/architecture.md, "The token source: where a
 * shared store sits"): several sidecars on one ApiKey share one token through a FleetStore. Its
 * `acquire` reads the store first and adopts a peer's newer token with no gentoken call; else it
 * claims the renewal, reads again, has the local source call gentoken (single flight, budget,
 * backoff, Retry-After as ever) and publishes by compare-and-set on the version it read; a result
 * that lost the race is dropped and the store's token adopted. Requests never wait on the store:
 * `current()` reads memory. When the store is down the current token keeps serving and
 * `onStoreDown` decides what happens near its end.
 */
export class FleetSource implements TokenAcquisition {
  readonly #local: TokenSource;
  readonly #state: TokenState;
  readonly #loop: RenewalLoop;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #secrets: SecretSet;
  readonly #credentials: Pick<CredentialStore, 'current'>;
  readonly #maxLifetimeSeconds: number;
  readonly #renewAt: number;
  readonly #random: () => number;
  readonly #onAdopted: FleetSourceDeps['onAdopted'];
  readonly #o: FleetOptions;
  readonly #store: FleetStore;
  #inflight: Promise<TokenSnapshot> | undefined;
  /** The record key and version of the token held (0: none from the store). */
  #heldKey: string | undefined;
  #heldVersion = 0;
  #heldRecord: FleetRecord | undefined;
  #source: Source = 'none';
  #storeUp: boolean | undefined;
  #stateSinceWall: number;
  #lastError: FleetStatus['lastError'];
  #claimed: string | undefined;
  #pollTimer: TimerHandle | undefined;
  #unwatch: (() => void) | undefined;
  #stopped = false;

  constructor(deps: FleetSourceDeps) {
    this.#local = deps.local;
    this.#state = deps.state;
    this.#loop = deps.loop;
    this.#clock = deps.clock;
    this.#logger = deps.logger;
    this.#secrets = deps.secrets;
    this.#credentials = deps.credentials;
    this.#maxLifetimeSeconds = deps.maxLifetimeSeconds;
    this.#renewAt = deps.renewAt;
    this.#random = deps.random;
    this.#onAdopted = deps.onAdopted;
    this.#o = deps.options;
    this.#store = deps.options.store;
    this.#stateSinceWall = deps.clock.wallNow();
  }

  /** The first attempt (through the loop's start spread), the polling and the store's change feed. */
  start(): void {
    this.#local.start();
    this.#schedulePoll();
    this.#subscribe();
  }

  /** Stops polling and watching and gives a held claim up at once (a peer need not wait for it to lapse). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#clock.clearTimeout(this.#pollTimer);
    this.#unwatch?.();
    this.#unwatch = undefined;
    const key = this.#claimed;
    this.#claimed = undefined;
    if (key !== undefined) await this.#store.release(key, this.#o.holder).catch(() => undefined);
  }

  current(): TokenSnapshot | undefined {
    return this.#state.usable(this.#clock.now());
  }

  acquire(trigger: PacedTrigger): Promise<TokenSnapshot> {
    if (this.#inflight) return this.#inflight;
    const p = this.#attempt(trigger).finally(() => {
      if (this.#inflight === p) this.#inflight = undefined;
    });
    this.#inflight = p;
    p.catch(() => undefined); // a timer-started attempt may have no listener
    return p;
  }

  inflight(): InFlight | undefined {
    return this.#inflight ? { attempt: this.#inflight, held: this.#local.inflight()?.held ?? false } : undefined;
  }

  mayCall(call: AnswerCall, now: number): boolean {
    return this.#local.mayCall(call, now);
  }

  /**
   * An attempt here may first follow a peer's claim until it lapses, then make its own call: a
   * waiter (a request with no token, a 401's replay) waits for both, or a peer stopped during its
   * claim would turn every waiter's wait into a 503 (docs/traps.md T96).
   */
  bounded(attempt: Promise<TokenSnapshot>): Promise<TokenSnapshot> {
    return this.#local.bounded(attempt, this.#claimMs());
  }

  renewDueAt(): number {
    return this.#local.renewDueAt();
  }

  /** Why no token is usable when the store is the reason (`onStoreDown: wait`); else undefined (the local source's reason). */
  reason(): string | undefined {
    if (this.#storeUp !== false || this.#o.onStoreDown !== 'wait' || this.current()) return undefined;
    return `the fleet store (${this.#store.kind}) is unreachable and fleet.onStoreDown is wait: no token until it returns`;
  }

  /** The fleet's part of the token status. */
  status(): FleetStatus {
    const record = this.#heldRecord;
    const wall = this.#clock.wallNow();
    return {
      store: this.#store.kind,
      credential: this.#o.credentialId ?? 'default',
      state: this.#storeUp === undefined ? 'unknown' : this.#storeUp ? 'up' : 'down',
      since: new Date(this.#stateSinceWall).toISOString(),
      source: this.#source,
      onStoreDown: this.#o.onStoreDown,
      ...(record ? {
        version: record.version,
        mintedBy: record.mintedBy,
        mintedAt: new Date(record.mintedAtWall).toISOString(),
        ageSeconds: Math.max(0, Math.round((wall - record.mintedAtWall) / 100) / 10),
        lifetimeSeconds: record.lifetimeSeconds,
      } : {}),
      ...(this.#lastError ? { lastError: this.#lastError } : {}),
    };
  }

  async #attempt(trigger: PacedTrigger): Promise<TokenSnapshot> {
    const held = this.current();
    if (trigger === 'upstream 401' && held && this.#source === 'shared') {
      // The 401 named an older token than the shared one held (the 401 flow marks the held one
      // bad when it is the refused one): a peer's renewal revoked it, and the request is replayed
      // with the newest token the fleet has. A call here would revoke every peer's token in turn.
      return held;
    }
    const key = this.#keyNow();
    const read = await this.#readOrAdopt(key, trigger);
    if ('adopted' in read) return read.adopted;
    const { record } = read;
    if (trigger === 'upstream 401' && this.#state.bad && record !== undefined && record.version === this.#heldVersion && this.#heldKey === key) {
      // Only the version this process saw refused: a peer's fresher token is never wiped.
      await this.#store.invalidate(key, record.version).catch((err: unknown) => this.#storeError(err));
    }
    return this.#renew(key, trigger);
  }

  /** Claims the renewal; the winner reads again, mints and publishes; a loser follows the winner. */
  async #renew(key: string, trigger: PacedTrigger): Promise<TokenSnapshot> {
    for (;;) {
      let won: boolean;
      try {
        won = await this.#store.claim(key, this.#o.holder, this.#claimMs());
      } catch (err) {
        this.#o.onClaim?.('error');
        return this.#whileDown(err, trigger);
      }
      this.#o.onClaim?.(won ? 'won' : 'lost');
      if (won) return this.#mint(key, trigger);
      const adopted = await this.#follow(key, trigger);
      if (adopted) return adopted;
    }
  }

  /**
   * A peer holds the claim: keep the current token and read the store until the peer's token is
   * there; after a second, claim again (a dead peer's claim may have lapsed). Each wait is on the
   * loop's timer (liveness).
   */
  async #follow(key: string, trigger: PacedTrigger): Promise<TokenSnapshot | undefined> {
    // Claim again every second: a dead claimant's claim is taken over as soon as it lapses.
    // A quarter of a short claim: a 1.4 s claim of a 4 s token is taken over within 350 ms of lapsing.
    const until = this.#clock.now() + Math.max(FOLLOW_INTERVAL_MS, Math.min(this.#claimMs() / 4, RECLAIM_INTERVAL_MS));
    let woke: (() => void) | undefined;
    const unwatch = this.#store.watch?.(key, () => woke?.());
    try {
      while (this.#clock.now() < until) {
        await Promise.race([
          this.#loop.waitUntil(this.#clock.now() + FOLLOW_INTERVAL_MS),
          new Promise<void>((resolve) => (woke = resolve)),
        ]);
        const read = await this.#readOrAdopt(key, trigger);
        if ('adopted' in read) return read.adopted;
      }
      return undefined;
    } finally {
      unwatch?.();
    }
  }

  /**
   * Reads the record: a token there worth adopting is adopted (`adopted`); a store that failed is
   * the store down (`adopted`: what the current token or onStoreDown gives); else the record read.
   */
  async #readOrAdopt(key: string, trigger: PacedTrigger): Promise<{ adopted: TokenSnapshot } | { record: FleetRecord | undefined }> {
    let record: FleetRecord | undefined;
    try {
      record = await this.#store.read(key);
    } catch (err) {
      return { adopted: await this.#whileDown(err, trigger) };
    }
    this.#up();
    if (record && this.#adoptable(key, record)) return { adopted: this.#adopt(key, record, trigger) };
    return { record };
  }

  /** This process holds the claim: read again (a peer may have renewed already), mint, publish on the version read. */
  async #mint(key: string, trigger: PacedTrigger): Promise<TokenSnapshot> {
    this.#claimed = key;
    try {
      const read = await this.#readOrAdopt(key, trigger);
      if ('adopted' in read) return read.adopted;
      const { record } = read;
      let token: TokenSnapshot;
      try {
        token = await this.#local.acquire(trigger);
      } catch (err) {
        // The call failed (its deadline passed while this process was stopped, say): a peer that
        // took over the lapsed claim may have published; its token serves this process's waiters (T97).
        const after = await this.#store.read(key).catch(() => undefined);
        if (after && this.#adoptable(key, after)) return this.#adopt(key, after, trigger);
        throw err;
      }
      await this.#publish(key, token, record?.version ?? 0);
      return this.current() ?? token;
    } finally {
      this.#claimed = undefined;
      if (!this.#stopped) await this.#store.release(key, this.#o.holder).catch((err: unknown) => this.#storeError(err));
    }
  }

  /** Publishes `token` on `expected`; a lost race adopts the store's token and drops this one. */
  async #publish(key: string, token: TokenSnapshot, expected: number): Promise<void> {
    const minted = { token: token.value, lifetimeSeconds: token.lifetimeSeconds, mintedAtWall: token.obtainedAtWall, mintedBy: this.#o.holder };
    let result;
    try {
      result = await this.#store.publish(key, minted, expected);
    } catch (err) {
      this.#storeError(err);
      this.#setSource('local', 'the token this process obtained could not be published');
      return;
    }
    this.#up();
    if (result.ok) {
      this.#held(key, { ...minted, version: result.version });
      this.#setSource('shared');
      this.#logger.info('token published to the fleet store', { fingerprint: token.fingerprint, version: result.version, store: this.#store.kind });
      return;
    }
    this.#o.onPublishConflict?.();
    if (result.current && this.#adoptable(key, result.current)) {
      this.#logger.warn('fleet store: a peer published first; its token is adopted and this one dropped', { dropped: token.fingerprint, version: result.current.version });
      this.#adopt(key, result.current, 'renewal');
      return;
    }
    // The store holds nothing usable either (marked invalid, or expired): ours goes on the version it has now.
    if (result.current) await this.#publish(key, token, result.current.version);
  }

  /**
   * The store failed (`err`): the current token keeps serving. `local` renews alone near the
   * token's end (or at once without a usable token); `wait` never does. The store is tried again
   * on the loop's timer.
   */
  async #whileDown(err: unknown, trigger: PacedTrigger): Promise<TokenSnapshot> {
    this.#storeError(err);
    const now = this.#clock.now();
    const held = this.current();
    const localAt = held ? this.#localRenewalAt(held) : now;
    if (this.#o.onStoreDown === 'local' && (localAt <= now || trigger === 'upstream 401' || trigger === 'rotation')) {
      const token = await this.#local.acquire(trigger);
      this.#setSource('local', 'the fleet store is unreachable: this process renewed alone');
      return token;
    }
    // Look again at the poll interval, and (local) no later than the time to renew alone.
    const end = held ? held.expiresAt : Infinity;
    const next = Math.max(now + MIN_RENEW_DELAY_MS, Math.min(now + this.#o.pollIntervalMs, this.#o.onStoreDown === 'local' ? localAt : end));
    this.#loop.armAt(next, () => void this.acquire('renewal').catch(() => undefined));
    if (held) return held;
    throw new TokenUnavailableError(this.reason() ?? 'the fleet store is unreachable');
  }

  /** Renewing alone waits until halfway from the renewal point to the token's end, jittered so a fleet does not renew alone in lock-step. */
  #localRenewalAt(token: TokenSnapshot): number {
    const lifetimeMs = token.lifetimeSeconds * 1000;
    const window = lifetimeMs * (1 - this.#renewAt);
    return token.obtainedAt + lifetimeMs * this.#renewAt + window / 2 - this.#random() * 0.1 * window;
  }

  /** A record worth adopting: newer than the one held (or than the one a 401 marked bad), not marked invalid, still usable here. */
  #adoptable(key: string, record: FleetRecord | undefined): boolean {
    if (record === undefined || record.invalid) return false;
    if (this.#heldKey === key && record.version <= this.#heldVersion && this.#source !== 'local') return false;
    const held = this.#state.token;
    if (this.#source === 'local' && held && this.#heldKey === key && record.mintedAtWall <= held.obtainedAtWall) return false;
    if (held && held.value === record.token && !this.#state.bad && this.#heldKey === key) return false;
    return this.#expiresAt(record) - this.#margin(record) > this.#clock.now();
  }

  /**
   * Installs the store's token with a conservative end: minted at mintedAtWall by the minter's
   * clock, which may differ from this host's by the skew allowance, so it is taken as minted that
   * much earlier, and converted to the monotonic clock (a replica never attaches a token past its
   * own safe estimate). Its renewal is armed at renewAt of it, jittered per replica.
   */
  #adopt(key: string, record: FleetRecord, trigger: PacedTrigger): TokenSnapshot {
    const now = this.#clock.now();
    const lifetimeSeconds = Math.min(record.lifetimeSeconds, this.#maxLifetimeSeconds);
    // The end is taken early by the skew allowance; the renewal stays at renewAt of the minter's
    // lifetime, or followers would renew before the minter and the fleet mint twice as often.
    const obtainedAt = Math.min(now, this.#expiresAt(record) - lifetimeSeconds * 1000);
    const mintedAt = Math.min(now, now - (this.#clock.wallNow() - record.mintedAtWall));
    this.#secrets.addToken(record.token); // before anything could log it
    const creds = this.#credentials.current();
    const token = this.#state.obtained({ token: record.token, aliveSecondsTtl: record.lifetimeSeconds }, creds, obtainedAt, record.mintedAtWall, lifetimeSeconds);
    this.#held(key, record);
    this.#setSource('shared');
    this.#onAdopted(token, trigger, now);
    const renewInSeconds = this.#loop.succeeded(mintedAt, lifetimeSeconds * 1000, () => this.#kick('renewal'));
    this.#logger.info('token adopted from the fleet store', {
      fingerprint: token.fingerprint, generation: token.generation, version: record.version, mintedBy: record.mintedBy,
      expiresInSeconds: Math.round((token.expiresAt - now) / 100) / 10, renewInSeconds, trigger,
    });
    return token;
  }

  /** Monotonic ms the record's token ends by this host's safe estimate. */
  #expiresAt(record: FleetRecord): number {
    const lifetimeMs = Math.min(record.lifetimeSeconds, this.#maxLifetimeSeconds) * 1000;
    const skew = Math.min(this.#o.clockSkewMs, lifetimeMs * MAX_SKEW_FRACTION);
    return this.#clock.now() + (record.mintedAtWall + lifetimeMs - skew - this.#clock.wallNow());
  }

  #margin(record: FleetRecord): number {
    return Math.min(5_000, Math.min(record.lifetimeSeconds, this.#maxLifetimeSeconds) * 100);
  }

  #kick(trigger: PacedTrigger): void {
    void this.acquire(trigger).catch(() => undefined);
  }

  /**
   * The claim's lifetime: the gentoken deadline and a margin of at most a tenth of the token's
   * lifetime. With 4 s tokens a 5 s margin would outlive the token, and a claimant killed mid-call
   * would leave the fleet without one until it lapsed (docs/traps.md T95).
   */
  #claimMs(): number {
    const margin = this.#o.claimMarginMs ?? 0;
    const lifetimeMs = (this.#state.token?.lifetimeSeconds ?? this.#maxLifetimeSeconds) * 1000;
    return this.#o.claimMs - margin + Math.min(margin, lifetimeMs * 0.1);
  }

  #keyNow(): string {
    const key = fleetRecordKey(this.#o.baseUrl, this.#credentials.current().apiKey);
    if (this.#heldKey !== undefined && this.#heldKey !== key) {
      // New credentials: the old key's record is not theirs.
      this.#heldKey = undefined;
      this.#heldVersion = 0;
      this.#resubscribe();
    }
    return key;
  }

  #held(key: string, record: FleetRecord): void {
    this.#heldKey = key;
    this.#heldVersion = record.version;
    this.#heldRecord = record;
  }

  /** Polling, always (a feed may miss a change): reads the store, adopts a peer's newer token, publishes a local one once the store is back. */
  #schedulePoll(): void {
    if (this.#stopped) return;
    const jittered = this.#o.pollIntervalMs * (0.9 + 0.2 * this.#random());
    this.#pollTimer = this.#clock.setTimeout(() => {
      void this.#poll().finally(() => this.#schedulePoll());
    }, jittered);
  }

  async #poll(): Promise<void> {
    if (this.#stopped || this.#inflight) return;
    let key: string;
    let record: FleetRecord | undefined;
    try {
      key = this.#keyNow();
      record = await this.#store.read(key);
    } catch (err) {
      this.#storeError(err);
      return;
    }
    this.#up();
    if (this.#stopped || this.#inflight) return;
    if (record && this.#adoptable(key, record)) {
      this.#adopt(key, record, 'renewal');
      return;
    }
    const held = this.current();
    if (this.#source === 'local' && held) {
      // The store is back and holds nothing newer: the local token becomes the shared one.
      const p = this.#publish(key, held, record?.version ?? 0);
      this.#inflight = p.then(() => this.current() ?? held);
      await p.finally(() => (this.#inflight = undefined));
    }
  }

  #subscribe(): void {
    if (!this.#store.watch || this.#stopped) return;
    const key = this.#keyNow();
    try {
      this.#unwatch = this.#store.watch(key, () => void this.#poll());
    } catch (err) {
      this.#storeError(err);
    }
  }

  #resubscribe(): void {
    this.#unwatch?.();
    this.#unwatch = undefined;
    queueMicrotask(() => this.#subscribe());
  }

  #up(): void {
    if (this.#storeUp === true) return;
    const wasDown = this.#storeUp === false;
    this.#storeUp = true;
    this.#stateSinceWall = this.#clock.wallNow();
    if (wasDown) this.#logger.info('fleet store reachable again', { store: this.#store.kind });
  }

  #storeError(err: unknown): void {
    const operation = err instanceof FleetStoreError ? err.operation : 'read';
    const message = err instanceof FleetStoreError ? err.message : `unexpected ${(err as Error)?.name ?? 'error'}`;
    this.#o.onStoreError?.(operation);
    this.#lastError = { operation, message, at: new Date(this.#clock.wallNow()).toISOString() };
    if (this.#storeUp === false) return;
    this.#storeUp = false;
    this.#stateSinceWall = this.#clock.wallNow();
    const kept = this.current();
    this.#logger.error('fleet store unreachable; the current token keeps serving', {
      store: this.#store.kind, operation, reason: message, onStoreDown: this.#o.onStoreDown,
      keptToken: kept?.fingerprint, keptTokenExpiresInSeconds: kept ? Math.round((kept.expiresAt - this.#clock.now()) / 1000) : undefined,
    });
  }

  #setSource(source: Source, why?: string): void {
    if (this.#source === source) return;
    const was = this.#source;
    this.#source = source;
    if (source === 'local') this.#logger.warn('token source: local', { store: this.#store.kind, reason: why });
    else if (was === 'local') this.#logger.info('token source: shared again', { store: this.#store.kind });
  }
}
