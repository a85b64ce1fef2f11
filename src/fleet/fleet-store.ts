/**
 * fleet/: the store several sidecars on one ApiKey share their token through (docs/fleet.md): the
 * record and its key (fleet-record.ts), this contract, and one file per engine (SQLite, Redis, a
 * Kubernetes Secret). The token layer's fleet source (token/fleet-source.ts) is the only user.
 * May import: shared/, observability/.
 */
import type { FleetRecord, MintedRecord } from './fleet-record.js';

/** The store's operations, as the `operation` label of the store-error counter names them. */
export type StoreOperation = 'read' | 'claim' | 'release' | 'publish' | 'invalidate' | 'watch';

/** The engines `fleet.store` may name besides `none`. */
export type StoreKind = 'sqlite' | 'redis' | 'kubernetes';

/**
 * The store could not be reached or refused the operation (not a lost race: that is an answer).
 * The message is the engine's own words with no secret in them (no password, no token, no URL
 * credentials): it is logged and shown by `status`.
 */
export class FleetStoreError extends Error {
  override name = 'FleetStoreError';
  readonly operation: StoreOperation;
  constructor(operation: StoreOperation, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.operation = operation;
  }
}

/** What a compare-and-set publish did. */
export type PublishResult =
  /** Stored: the record now has `version`. */
  | { readonly ok: true; readonly version: number }
  /** Lost the race: the stored version was not the one expected; `current` is what is stored now. */
  | { readonly ok: false; readonly current: FleetRecord | undefined };

/**
 * One shared record per key, each change a compare-and-set on its version (docs/fleet.md, "The
 * record"). Every method may reject with FleetStoreError; none waits longer than the engine's own
 * operation deadline. Keys come from fleetRecordKey() (fleet-record.ts): the ApiKey never reaches
 * the store.
 */
export interface FleetStore {
  readonly kind: StoreKind;
  /** The record, or undefined when none was published yet. */
  read(key: string): Promise<FleetRecord | undefined>;
  /**
   * Takes the renewal claim of `key` for `ttlMs` when it is free, lapsed, or already `holder`'s
   * (then it is extended). True when `holder` holds it now; false when a live peer does.
   */
  claim(key: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the claim up at once if `holder` still holds it (a clean stop, a renewal done); else nothing. */
  release(key: string, holder: string): Promise<void>;
  /**
   * Stores `record` as version `expectedVersion + 1` only while the stored version is
   * `expectedVersion` (0: no record yet). A record is never overwritten by one that did not see it.
   */
  publish(key: string, record: MintedRecord, expectedVersion: number): Promise<PublishResult>;
  /**
   * Marks version `version` invalid (its token was refused after a replay) only while it is still
   * the stored version: a peer's fresher token is never touched. True when it was marked.
   */
  invalidate(key: string, version: number): Promise<boolean>;
  /**
   * Calls `onChange` when the record of `key` may have changed (the engine's change feed: Redis
   * pub/sub, a Kubernetes watch), with no argument: the caller reads. Returns the unsubscribe.
   * Absent when the engine has no feed (SQLite): the caller's polling is the only way.
   */
  watch?(key: string, onChange: () => void): () => void;
  /** Closes connections and watches; idempotent. */
  close(): Promise<void>;
}
