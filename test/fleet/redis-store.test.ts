import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { fleetRecordKey, type MintedRecord } from '../../src/fleet/fleet-record.js';
import { FleetStoreError, type FleetStore } from '../../src/fleet/fleet-store.js';
import { openRedisStore, type RedisStoreOptions } from '../../src/fleet/redis-store.js';
import { parseRedisUrl } from '../../src/fleet/redis-url.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { forwardToSocket, startRedis, type RealRedis } from '../helpers/redis-server.js';
import { testTls } from '../helpers/tls.js';
import { describeStoreContract } from './store-contract.js';

const minted = (token: string): MintedRecord => ({ token, lifetimeSeconds: 900, mintedAtWall: 1_790_000_000_000, mintedBy: 'host-a/1' });
let keys = 0;
const freshKey = () => fleetRecordKey('https://vendor.test/', `redis-test-key-${++keys}`);
const open = (options: Partial<RedisStoreOptions> & { url: string }) => openRedisStore({ logger: createCaptureLogger().logger, ...options });

/** Resolves once `probe` stops throwing; the test runner's timeout bounds it. */
async function eventually<T>(probe: () => Promise<T>): Promise<T> {
  for (;;) {
    try {
      return await probe();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/** A watcher whose calls can be awaited one by one. */
function watcher() {
  let calls = 0;
  let wake: (() => void) | undefined;
  return {
    onChange: () => { calls++; wake?.(); },
    get calls() { return calls; },
    /** Resolves when the count passes `seen`. */
    async after(seen: number): Promise<void> {
      while (calls <= seen) await new Promise<void>((resolve) => (wake = resolve));
    },
  };
}

describeStoreContract('redis', async () => {
  const server = await startRedis();
  const a = await open({ url: server.url });
  const b = await open({ url: server.url });
  return { a, b, close: () => server.close() };
});

describe('redis store: URLs', () => {
  it('reads the three forms, and keeps the credentials out of what it displays', () => {
    assert.deepEqual(parseRedisUrl('redis://fleet:s%40cret@redis.internal:6380/2'),
      { host: 'redis.internal', port: 6380, tls: false, db: 2, username: 'fleet', password: 's@cret', display: 'redis://redis.internal:6380/2' });
    assert.deepEqual(parseRedisUrl('rediss://:only-pass@[::1]'), { host: '::1', port: 6379, tls: true, db: 0, password: 'only-pass', display: 'rediss://[::1]' });
    assert.deepEqual(parseRedisUrl('unix:///run/redis/redis.sock?db=3'), { path: '/run/redis/redis.sock', tls: false, db: 3, display: 'unix:///run/redis/redis.sock' });
  });

  it('refuses what it cannot connect to, without echoing a password', () => {
    for (const url of ['http://user:hunter2@host/', 'redis://user:hunter2@host/x', 'unix://user:hunter2@/run/redis.sock', 'unix:///', 'not a url hunter2']) {
      assert.throws(() => parseRedisUrl(url), (err: Error) => !err.message.includes('hunter2'), url);
    }
  });
});

describe('redis store: a store that goes away and comes back', () => {
  let server: RealRedis;
  before(async () => (server = await startRedis()));
  after(() => server.close());

  it('rejects every operation with a FleetStoreError naming it while Redis is down, then works again on the restarted server', async () => {
    const a = await open({ url: server.url, reconnectMaxDelayMs: 200 });
    const b = await open({ url: server.url, reconnectMaxDelayMs: 200 });
    try {
      const key = freshKey();
      assert.equal((await a.publish(key, minted('tok-1'), 0)).ok, true);
      await server.kill();
      const attempts: Array<[string, () => Promise<unknown>]> = [
        ['read', () => a.read(key)], ['claim', () => a.claim(key, 'a', 5_000)], ['release', () => a.release(key, 'a')],
        ['publish', () => a.publish(key, minted('tok-2'), 1)], ['invalidate', () => a.invalidate(key, 1)],
      ];
      for (const [operation, attempt] of attempts) {
        await assert.rejects(attempt(), (err: unknown) => err instanceof FleetStoreError && err.operation === operation && err.message.includes(operation), operation);
      }
      await server.restart();
      // The restarted server has no data: the record is gone, and a first publish works again.
      assert.equal(await eventually(() => a.read(key)), undefined);
      assert.deepEqual(await a.publish(key, minted('tok-2'), 0), { ok: true, version: 1 });
      assert.equal((await eventually(() => b.read(key)))?.token, 'tok-2');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
