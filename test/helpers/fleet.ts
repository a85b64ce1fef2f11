import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FleetStoreError, type FleetStore, type StoreOperation } from '../../src/fleet/fleet-store.js';
import { openSqliteStore } from '../../src/fleet/sqlite-store.js';
import { SecretSet } from '../../src/shared/secrets.js';
import { TokenRequestError } from '../../src/shared/errors.js';
import type { FleetOptions } from '../../src/token/fleet-source.js';
import type { AuthResult, Credentials } from '../../src/token/token-client.js';
import { TokenManager } from '../../src/token/token-manager.js';
import { createCaptureLogger, type CapturedLogger } from './capture-logger.js';
import type { FakeClock } from './fake-clock.js';

/**
 * A vendor that keeps ONE live token per ApiKey (a new gentoken revokes the one before), in
 * memory: the fleet tests' service. `hold()` makes the next gentoken calls wait until `release()`
 * (a slow or dead minter).
 */
export class OneLiveTokenVendor {
  readonly ttlSeconds: number;
  calls = 0;
  readonly #live = new Map<string, string>();
  #held: Array<(failed: boolean) => void> | undefined;

  constructor(ttlSeconds: number) {
    this.ttlSeconds = ttlSeconds;
  }

  readonly client = {
    requestToken: async (c: Credentials): Promise<AuthResult> => {
      this.calls++;
      const n = this.calls;
      if (this.#held) {
        const failed = await new Promise<boolean>((resolve) => this.#held!.push(resolve));
        if (failed) throw new TokenRequestError('timed out after 10000ms', { kind: 'timeout' });
      }
      const token = `live-${n}-${'x'.repeat(16)}`;
      this.#live.set(c.apiKey, token);
      return { token, aliveSecondsTtl: this.ttlSeconds };
    },
  };

  /** True when `token` is the key's one live token. */
  accepts(apiKey: string, token: string | undefined): boolean {
    return token !== undefined && this.#live.get(apiKey) === token;
  }

  live(apiKey: string): string | undefined {
    return this.#live.get(apiKey);
  }

  hold(): void {
    this.#held ??= [];
  }

  release(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const r of held) r(false);
  }

  /** The held calls fail as the real client's deadline would (a minter stopped past it: SIGSTOP). */
  timeOutHeld(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const r of held) r(true);
  }
}

/** A store whose every operation fails while `down` (an engine that cannot reach its server). */
export class SwitchableStore implements FleetStore {
  readonly kind: FleetStore['kind'];
  down = false;
  readonly #inner: FleetStore;
  constructor(inner: FleetStore) {
    this.#inner = inner;
    this.kind = inner.kind;
  }
  #check(op: StoreOperation): void {
    if (this.down) throw new FleetStoreError(op, `${this.kind} store unreachable (test)`);
  }
  async read(key: string) { this.#check('read'); return this.#inner.read(key); }
  async claim(key: string, holder: string, ttlMs: number) { this.#check('claim'); return this.#inner.claim(key, holder, ttlMs); }
  async release(key: string, holder: string) { this.#check('release'); return this.#inner.release(key, holder); }
  async publish(...args: Parameters<FleetStore['publish']>) { this.#check('publish'); return this.#inner.publish(...args); }
  async invalidate(key: string, version: number) { this.#check('invalidate'); return this.#inner.invalidate(key, version); }
  close() { return this.#inner.close(); }
}

export const FLEET_API_KEY = 'fleet-apikey-0123456789';
export const FLEET_BASE_URL = 'https://vendor.test/';

/** A SQLite store on a fresh temp file, its claims on the fake clock's wall time. */
export async function sqliteOnTemp(clock: FakeClock, path = join(mkdtempSync(join(tmpdir(), 'b2b-fleet-')), 'fleet.db')): Promise<{ store: FleetStore; path: string }> {
  return { store: await openSqliteStore({ path, wallNow: () => clock.wallNow() }), path };
}

export interface Replica {
  manager: TokenManager;
  log: CapturedLogger;
  name: string;
}

/** One sidecar's token manager on `store`, against `vendor`, on `clock`. */
export function replica(name: string, store: FleetStore, vendor: OneLiveTokenVendor, clock: FakeClock, extra: Partial<FleetOptions> & { file?: string; random?: () => number; renewAt?: number } = {}): Replica {
  const secrets = new SecretSet();
  const log = createCaptureLogger({ secrets });
  const { file, random, renewAt, ...fleet } = extra;
  const manager = new TokenManager({
    client: vendor.client,
    credentials: { current: () => ({ apiKey: FLEET_API_KEY, password: 'pw-fleet-Secret', version: 1 }) },
    clock, logger: log.logger, secrets, random: random ?? (() => 0.5),
    fleet: {
      store, baseUrl: FLEET_BASE_URL, holder: name, onStoreDown: 'local', pollIntervalMs: 1_000, claimMs: 12_000, clockSkewMs: 1_000,
      ...fleet,
    },
    options: { renewAt: renewAt ?? 0.66, maxLifetimeSeconds: 900, tokenTimeoutMs: 10_000, maxGentokenPerMinute: 12, ...(file ? { file } : {}) },
  });
  return { manager, log, name };
}
