import { createHash } from 'node:crypto';

/**
 * The token as a fleet shares it: what a replica needs to use and to judge it, and who minted it.
 * Never the ApiKey or the password (docs/fleet.md, "The record").
 */
export interface MintedRecord {
  readonly token: string;
  /** The effective lifetime the minter computed, in seconds: min(aliveSecondsTtl, token.maxLifetimeSeconds). */
  readonly lifetimeSeconds: number;
  /** Wall-clock ms the minter sent its gentoken request: the lifetime counts from here. */
  readonly mintedAtWall: number;
  /** Who minted it (host name and process id, or the pod's name): for status and logs. */
  readonly mintedBy: string;
  /** Set when a holder saw this token refused after a replay: nobody adopts it, the next renewal replaces it. */
  readonly invalid?: boolean;
}

/** A stored record: the minted token and its version (1 for the first publish, +1 for each change). */
export interface FleetRecord extends MintedRecord {
  readonly version: number;
}

/**
 * The record's key for one credential set: the service's base URL and a hash of the ApiKey, so two
 * keys never share a record and the key cannot be read back from the store. 32 hex characters
 * after the prefix: fits a Redis key, a SQLite primary key and a Kubernetes Secret data key
 * (`[-._a-zA-Z0-9]+`).
 */
export function fleetRecordKey(baseUrl: string, apiKey: string): string {
  const digest = createHash('sha256').update(new URL(baseUrl).href).update('\n').update(apiKey).digest('hex');
  return `b2b-sidecar.${digest.slice(0, 32)}`;
}

/** Parses a stored record, liberal in what it accepts and exact in what it reads; undefined when unusable. */
export function parseRecord(value: unknown): FleetRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Record<string, unknown>;
  if (typeof r.token !== 'string' || r.token === '') return undefined;
  if (!isPositive(r.version) || !Number.isInteger(r.version)) return undefined;
  if (!isPositive(r.lifetimeSeconds) || !isPositive(r.mintedAtWall)) return undefined;
  return {
    version: r.version as number,
    token: r.token,
    lifetimeSeconds: r.lifetimeSeconds as number,
    mintedAtWall: r.mintedAtWall as number,
    mintedBy: typeof r.mintedBy === 'string' ? r.mintedBy : 'unknown',
    ...(r.invalid === true ? { invalid: true } : {}),
  };
}

/** The record as stored: JSON, the version inside. */
export function serializeRecord(record: FleetRecord): string {
  return JSON.stringify({
    version: record.version, token: record.token, lifetimeSeconds: record.lifetimeSeconds,
    mintedAtWall: record.mintedAtWall, mintedBy: record.mintedBy, ...(record.invalid ? { invalid: true } : {}),
  });
}

function isPositive(n: unknown): boolean {
  return typeof n === 'number' && Number.isFinite(n) && n > 0;
}
