import assert from 'node:assert/strict';
import { mkdtemp, rm, chmod, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fleetRecordKey } from '../../src/fleet/fleet-record.js';
import { FleetStoreError } from '../../src/fleet/fleet-store.js';
import { openSqliteStore } from '../../src/fleet/sqlite-store.js';
import { describeStoreContract } from './store-contract.js';

describeStoreContract('sqlite', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'b2b-fleet-sqlite-'));
  const path = join(dir, 'fleet.db');
  // Two stores on one file: two processes on one host.
  return {
    a: await openSqliteStore({ path }),
    b: await openSqliteStore({ path }),
    close: () => rm(dir, { recursive: true, force: true }),
  };
});

describe('sqlite store', () => {
  it('fails with a FleetStoreError naming the operation while the file cannot be opened, and works once it can', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'b2b-fleet-sqlite-'));
    const path = join(dir, 'missing', 'fleet.db');
    const store = await openSqliteStore({ path });
    const key = fleetRecordKey('https://vendor.test/', 'k');
    await assert.rejects(store.read(key), (err: unknown) => err instanceof FleetStoreError && err.operation === 'read');
    await assert.rejects(store.claim(key, 'a', 1000), (err: unknown) => err instanceof FleetStoreError && err.operation === 'claim');
    await mkdir(join(dir, 'missing'));
    assert.equal(await store.read(key), undefined);
    assert.equal(await store.claim(key, 'a', 1000), true);
    await store.close();
    await assert.rejects(store.read(key), FleetStoreError);
    await chmod(dir, 0o700);
    await rm(dir, { recursive: true, force: true });
  });

  it('keeps no secret of the record in the claim row and stores the version in the record', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'b2b-fleet-sqlite-'));
    const store = await openSqliteStore({ path: join(dir, 'f.db') });
    const key = fleetRecordKey('https://vendor.test/', 'k');
    await store.publish(key, { token: 't', lifetimeSeconds: 10, mintedAtWall: 1, mintedBy: 'x', invalid: true }, 0);
    assert.equal((await store.read(key))?.invalid, undefined, 'a publish never stores an invalid record');
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
});

describe('sqlite store file', () => {
  it('creates the database file readable by its owner only: it holds the token', async () => {
    const { stat } = await import('node:fs/promises');
    const dir = await mkdtemp(join(tmpdir(), 'b2b-fleet-sqlite-'));
    const store = await openSqliteStore({ path: join(dir, 'f.db') });
    await store.read(fleetRecordKey('https://vendor.test/', 'k'));
    assert.equal((await stat(join(dir, 'f.db'))).mode & 0o777, 0o600);
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
});

describe('sqlite store under another process\'s lock (docs/traps.md T84)', () => {
  it('gives up after busy_timeout with a FleetStoreError instead of blocking the event loop indefinitely', async () => {
    const { DatabaseSync } = await import('node:sqlite');
    const dir = await mkdtemp(join(tmpdir(), 'b2b-fleet-sqlite-'));
    const path = join(dir, 'f.db');
    const store = await openSqliteStore({ path, busyTimeoutMs: 50 });
    const key = fleetRecordKey('https://vendor.test/', 'k');
    assert.equal(await store.read(key), undefined); // creates the file and table
    const other = new DatabaseSync(path);
    other.exec('BEGIN IMMEDIATE');
    await assert.rejects(store.claim(key, 'a', 1000), (err: unknown) => err instanceof FleetStoreError && err.operation === 'claim');
    other.exec('ROLLBACK');
    assert.equal(await store.claim(key, 'a', 1000), true, 'usable again once the other process is done');
    other.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
});
