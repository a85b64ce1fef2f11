/**
 * The SQLite engine of the fleet store (docs/fleet.md, "SQLite"): several processes on one host
 * share one database file. `node:sqlite` ships with Node (no dependency) and is imported only when
 * `fleet.store` is `sqlite`. WAL lets readers go on while one process writes; every change is one
 * `BEGIN IMMEDIATE` transaction (the write lock taken up front, so two processes never both read
 * a version and both write on it); `busy_timeout` waits a little for another process's
 * transaction instead of failing. The API is synchronous: each transaction is a few row reads and
 * one write, microseconds, and busy_timeout bounds the worst wait (docs/traps.md, "T84. A synchronous store blocks the event loop").
 */
import { closeSync, openSync } from 'node:fs';
import type { DatabaseSync } from 'node:sqlite';
import { parseRecord, serializeRecord, type FleetRecord, type MintedRecord } from './fleet-record.js';
import { FleetStoreError, type FleetStore, type PublishResult, type StoreOperation } from './fleet-store.js';

export interface SqliteStoreOptions {
  /** The database file (`fleet.sqlitePath`); created with its table on first use. */
  path: string;
  /** Longest wait for another process's transaction, in ms. */
  busyTimeoutMs?: number;
  /** Wall-clock ms the claims' lifetimes count in (the host's clock, shared by its processes). */
  wallNow?: () => number;
}

const DEFAULT_BUSY_TIMEOUT_MS = 1_000;

const SCHEMA = `CREATE TABLE IF NOT EXISTS fleet_records (
  key TEXT PRIMARY KEY,
  record TEXT,
  version INTEGER NOT NULL DEFAULT 0,
  claim_holder TEXT,
  claim_until INTEGER NOT NULL DEFAULT 0
)`;

interface Row { record: string | null; version: number; claim_holder: string | null; claim_until: number }

type SqliteModule = typeof import('node:sqlite');
let sqliteModule: Promise<SqliteModule> | undefined;

/**
 * Imports node:sqlite once. Node 22 prints an ExperimentalWarning for it on the first import;
 * that one warning (and no other) is kept out of the sidecar's output: the engine is chosen by
 * the operator, and a warning they cannot act on would read as a fault (docs/fleet.md, "SQLite").
 */
export function loadSqlite(): Promise<SqliteModule> {
  sqliteModule ??= (async () => {
    const emit = process.emitWarning;
    process.emitWarning = function (this: unknown, warning: string | Error, ...rest: unknown[]) {
      const text = typeof warning === 'string' ? warning : warning.message;
      const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type ?? (warning as Error).name;
      if (type === 'ExperimentalWarning' && /sqlite/i.test(text)) return;
      return (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
    } as typeof process.emitWarning;
    try {
      // Not import(): the run bundle executes from a V8 code cache (entry/code-cache.ts), where a
      // dynamic import has no loader; a builtin is at hand synchronously.
      return process.getBuiltinModule('node:sqlite') as SqliteModule;
    } finally {
      process.emitWarning = emit;
    }
  })();
  return sqliteModule;
}

/** Opens the SQLite store; the file is opened on first use (and again after a failure), so a file not yet writable does not stop the start. */
export async function openSqliteStore(options: SqliteStoreOptions): Promise<FleetStore> {
  const sqlite = await loadSqlite();
  return new SqliteStore(sqlite, options);
}

class SqliteStore implements FleetStore {
  readonly kind = 'sqlite' as const;
  readonly #sqlite: SqliteModule;
  readonly #path: string;
  readonly #busyTimeoutMs: number;
  readonly #wallNow: () => number;
  #db: DatabaseSync | undefined;
  #closed = false;

  constructor(sqlite: SqliteModule, options: SqliteStoreOptions) {
    this.#sqlite = sqlite;
    this.#path = options.path;
    this.#busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
    this.#wallNow = options.wallNow ?? Date.now;
  }

  async read(key: string): Promise<FleetRecord | undefined> {
    return this.#run('read', false, (db) => recordOf(rowOf(db, key)));
  }

  async claim(key: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.#run('claim', true, (db) => {
      const row = rowOf(db, key);
      const now = this.#wallNow();
      if (row && row.claim_holder !== null && row.claim_holder !== holder && row.claim_until > now) return false;
      db.prepare(`INSERT INTO fleet_records (key, claim_holder, claim_until) VALUES (?, ?, ?)
        ON CONFLICT(key) DO UPDATE SET claim_holder = excluded.claim_holder, claim_until = excluded.claim_until`).run(key, holder, now + ttlMs);
      return true;
    });
  }

  async release(key: string, holder: string): Promise<void> {
    await this.#run('release', true, (db) => {
      db.prepare('UPDATE fleet_records SET claim_holder = NULL, claim_until = 0 WHERE key = ? AND claim_holder = ?').run(key, holder);
    });
  }

  async publish(key: string, record: MintedRecord, expectedVersion: number): Promise<PublishResult> {
    return this.#run('publish', true, (db): PublishResult => {
      const row = rowOf(db, key);
      const stored = row?.version ?? 0;
      if (stored !== expectedVersion) return { ok: false, current: recordOf(row) };
      const version = expectedVersion + 1;
      const text = serializeRecord({ ...withoutInvalid(record), version });
      db.prepare(`INSERT INTO fleet_records (key, record, version) VALUES (?, ?, ?)
        ON CONFLICT(key) DO UPDATE SET record = excluded.record, version = excluded.version`).run(key, text, version);
      return { ok: true, version };
    });
  }

  async invalidate(key: string, version: number): Promise<boolean> {
    return this.#run('invalidate', true, (db) => {
      const current = recordOf(rowOf(db, key));
      if (current?.version !== version) return false;
      // The version stays: the next publish is a compare-and-set on it like any other.
      db.prepare('UPDATE fleet_records SET record = ? WHERE key = ? AND version = ?').run(serializeRecord({ ...current, invalid: true }), key, version);
      return true;
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    const db = this.#db;
    this.#db = undefined;
    try {
      db?.close();
    } catch {
      // already closed
    }
  }

  /** One operation, in a `BEGIN IMMEDIATE` transaction when it writes; every failure becomes a FleetStoreError naming the operation. */
  #run<T>(operation: StoreOperation, writes: boolean, body: (db: DatabaseSync) => T): T {
    if (this.#closed) throw new FleetStoreError(operation, 'the SQLite store is closed');
    let db: DatabaseSync;
    try {
      db = this.#open();
    } catch (err) {
      throw new FleetStoreError(operation, `cannot open the SQLite store ${this.#path}: ${messageOf(err)}`, { cause: err });
    }
    try {
      if (!writes) return body(db);
      db.exec('BEGIN IMMEDIATE');
      try {
        const result = body(db);
        db.exec('COMMIT');
        return result;
      } catch (err) {
        if (db.isTransaction) db.exec('ROLLBACK');
        throw err;
      }
    } catch (err) {
      // A failure that is not another process's lock (a deleted or replaced file, a full disk):
      // the next operation opens the file again.
      if (!/busy|locked/i.test(messageOf(err))) void this.#reopenNextTime();
      throw new FleetStoreError(operation, `SQLite store ${this.#path}: ${messageOf(err)}`, { cause: err });
    }
  }

  #open(): DatabaseSync {
    if (this.#db) return this.#db;
    // The file holds the token: created readable by its owner only (SQLite gives the -wal and
    // -shm files the same mode). An existing file keeps the mode the operator gave it.
    closeSync(openSync(this.#path, 'a', 0o600));
    const db = new this.#sqlite.DatabaseSync(this.#path, { timeout: this.#busyTimeoutMs });
    try {
      db.exec(`PRAGMA busy_timeout = ${Math.floor(this.#busyTimeoutMs)}`);
      db.exec('PRAGMA journal_mode = WAL');
      db.exec('PRAGMA synchronous = NORMAL');
      db.exec(SCHEMA);
    } catch (err) {
      db.close();
      throw err;
    }
    this.#db = db;
    return db;
  }

  async #reopenNextTime(): Promise<void> {
    const db = this.#db;
    this.#db = undefined;
    try {
      db?.close();
    } catch {
      // already closed
    }
  }
}

function rowOf(db: DatabaseSync, key: string): Row | undefined {
  return db.prepare('SELECT record, version, claim_holder, claim_until FROM fleet_records WHERE key = ?').get(key) as Row | undefined;
}

function recordOf(row: Row | undefined): FleetRecord | undefined {
  if (!row?.record) return undefined;
  try {
    return parseRecord(JSON.parse(row.record));
  } catch {
    return undefined;
  }
}

function withoutInvalid(record: MintedRecord): MintedRecord {
  const { invalid: _invalid, ...rest } = record;
  return rest;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
