import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { Redis } from 'ioredis';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
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

/** The commands the store runs, on its keys and channels only: the ACL docs/fleet.md gives. */
const LEAST_PRIVILEGE = 'fleet on >fleet-pass ~b2b-sidecar.* &b2b-sidecar.* -@all +get +set +pexpire +del +eval +evalsha +publish +subscribe +unsubscribe';

describeStoreContract('redis, an ACL user with least privileges in a redis:// URL over TCP', async () => {
  const server = await startRedis(['--user', ...LEAST_PRIVILEGE.split(' ')]);
  const tcp = await forwardToSocket(server.socket);
  const url = `redis://fleet:fleet-pass@127.0.0.1:${tcp.port}`;
  const a = await open({ url });
  const b = await open({ url });
  return { a, b, close: async () => { await tcp.close(); await server.close(); } };
});

describe('redis store: the least-privilege ACL user', () => {
  it('may watch: its change feed works with the channel rule of the ACL', async () => {
    const server = await startRedis(['--user', ...LEAST_PRIVILEGE.split(' ')]);
    const tcp = await forwardToSocket(server.socket);
    const url = `redis://fleet:fleet-pass@127.0.0.1:${tcp.port}`;
    const a = await open({ url });
    const b = await open({ url });
    try {
      const key = freshKey();
      const seen = watcher();
      a.watch!(key, seen.onChange);
      await seen.after(0);
      const subscribed = seen.calls;
      await b.publish(key, minted('tok-1'), 0);
      await seen.after(subscribed);
    } finally {
      await a.close();
      await b.close();
      await tcp.close();
      await server.close();
    }
  });
});

describe('redis store: what is stored', () => {
  let server: RealRedis;
  let a: FleetStore;
  let raw: Redis;
  before(async () => {
    server = await startRedis();
    a = await open({ url: server.url });
    raw = new Redis({ path: server.socket });
  });
  after(async () => {
    raw.disconnect();
    await a.close();
    await server.close();
  });

  it('stores the record as serializeRecord\'s JSON with a time to live a little past the token\'s lifetime, kept when marked invalid', async () => {
    const key = freshKey();
    await a.publish(key, minted('tok-1'), 0);
    assert.deepEqual(JSON.parse((await raw.get(key))!), { version: 1, token: 'tok-1', lifetimeSeconds: 900, mintedAtWall: 1_790_000_000_000, mintedBy: 'host-a/1' });
    const ttl = await raw.pttl(key);
    assert.ok(ttl > 900_000 && ttl <= 900_000 + 600_000, `ttl ${ttl}`);
    await raw.pexpire(key, 123_456_789);
    assert.equal(await a.invalidate(key, 1), true);
    assert.ok(await raw.pttl(key) > 123_000_000, 'the time to live was kept');
    assert.equal((await a.read(key))?.invalid, true);
    assert.equal(await a.invalidate(key, 1), true, 'marking a marked version again says it is marked');
  });

  it('takes a value that is not a record for no record: read sees none, a first publish replaces it', async () => {
    const key = freshKey();
    await raw.set(key, 'not json {');
    assert.equal(await a.read(key), undefined);
    assert.equal(await a.invalidate(key, 1), false);
    assert.deepEqual(await a.publish(key, minted('tok-1'), 0), { ok: true, version: 1 });
    // A publish on a version that was never stored loses, with no current record to show.
    const empty = freshKey();
    assert.deepEqual(await a.publish(empty, minted('tok-x'), 3), { ok: false, current: undefined });
  });
});

describe('redis store: the change feed', () => {
  let server: RealRedis;
  let a: FleetStore;
  let b: FleetStore;
  before(async () => {
    server = await startRedis();
    a = await open({ url: server.url });
    b = await open({ url: server.url });
  });
  after(async () => {
    await a.close();
    await b.close();
    await server.close();
  });

  it('calls a watcher when a peer publishes or invalidates its key, not for another key, and no more once unsubscribed', async () => {
    const key = freshKey();
    const other = freshKey();
    const first = watcher();
    const second = watcher();
    const otherKey = watcher();
    const stopFirst = a.watch!(key, first.onChange);
    const stopSecond = a.watch!(key, second.onChange);
    const stopOther = a.watch!(other, otherKey.onChange);
    // Each watcher is called once its subscription is in place.
    await Promise.all([first.after(0), second.after(0), otherKey.after(0)]);
    let seen = first.calls;
    await b.publish(key, minted('tok-1'), 0);
    await first.after(seen);
    seen = first.calls;
    assert.equal(await b.invalidate(key, 1), true);
    await first.after(seen);
    // One message reaches every watcher of the key in one turn: once the second sees the next
    // publish, the first would have too.
    stopFirst();
    seen = first.calls;
    const secondSeen = second.calls;
    await b.publish(key, minted('tok-2'), 1);
    await second.after(secondSeen);
    assert.equal(first.calls, seen, 'an unsubscribed watcher was called');
    assert.equal(otherKey.calls, 1, 'a watcher of another key was called');
    stopSecond();
    stopOther();
  });

  it('keeps calling the other watchers when one throws, and logs it', async () => {
    const captured = createCaptureLogger();
    const c = await openRedisStore({ url: server.url, logger: captured.logger });
    try {
      const key = freshKey();
      const after = watcher();
      c.watch!(key, () => { throw new Error('a watcher bug'); });
      c.watch!(key, after.onChange);
      await after.after(0);
      const seen = after.calls;
      await b.publish(key, minted('tok-1'), 0);
      await after.after(seen);
      assert.match(captured.text(), /a change watcher threw/);
    } finally {
      await c.close();
    }
  });
});

describe('redis store: a store that goes away and comes back', () => {
  // Each test kills or stops its own server.
  let server: RealRedis;
  beforeEach(async () => (server = await startRedis()));
  afterEach(() => server.close());

  it('rejects every operation at once with a FleetStoreError naming it while Redis is down, then works again on the restarted server (T88)', { timeout: 20_000 }, async () => {
    // A deadline longer than the test, and the default reconnection pace: an operation that waited
    // for the connection (ioredis's offline queue, 20 reconnections per command) would time the
    // test out instead of rejecting.
    const a = await open({ url: server.url, operationTimeoutMs: 60_000 });
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
        await assert.rejects(attempt(), (err: unknown) => err instanceof FleetStoreError && err.operation === operation
          && err.message.startsWith(`Redis ${operation} on unix://${server.socket} failed: not connected`), operation);
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

  it('rejects within the operation deadline when Redis stops answering on an open connection (T88)', { timeout: 20_000 }, async () => {
    const a = await open({ url: server.url, operationTimeoutMs: 300 });
    try {
      const key = freshKey();
      await eventually(() => a.read(key));
      server.pause();
      try {
        for (const [operation, attempt] of [['read', () => a.read(key)], ['claim', () => a.claim(key, 'a', 5_000)]] as const) {
          await assert.rejects(attempt(), (err: unknown) => err instanceof FleetStoreError && err.operation === operation && /within 300 ms|timed out/.test(err.message), operation);
        }
      } finally {
        server.resume();
      }
      assert.equal(await eventually(() => a.claim(key, 'a', 5_000)), true);
    } finally {
      await a.close();
    }
  });

  it('subscribes again when Redis comes back, calls the watcher for what it may have missed, and passes on the next peer publish (T87)', { timeout: 20_000 }, async () => {
    const a = await open({ url: server.url, reconnectMaxDelayMs: 200 });
    const b = await open({ url: server.url, reconnectMaxDelayMs: 200 });
    try {
      const key = freshKey();
      const seen = watcher();
      a.watch!(key, seen.onChange);
      await seen.after(0);
      const beforeOutage = seen.calls;
      await server.kill();
      await server.restart();
      // Called once the subscription is back: a change made during the outage was announced to nobody.
      await seen.after(beforeOutage);
      const resubscribed = seen.calls;
      assert.equal((await eventually(() => b.publish(key, minted('tok-after'), 0))).ok, true);
      await seen.after(resubscribed);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('opens while Redis is down and works once it is up (a store down at start)', { timeout: 20_000 }, async () => {
    await server.kill();
    const a = await open({ url: server.url, reconnectMaxDelayMs: 200 });
    try {
      await assert.rejects(a.read(freshKey()), FleetStoreError);
      await server.restart();
      assert.equal(await eventually(() => a.read(freshKey())), undefined);
    } finally {
      await a.close();
    }
  });

  it('rejects operations after close, and a watch after close does nothing', async () => {
    const a = await open({ url: server.url });
    await a.close();
    await assert.rejects(a.read(freshKey()), (err: unknown) => err instanceof FleetStoreError && /closed/.test(err.message));
    a.watch!(freshKey(), () => assert.fail('called after close'))();
  });
});

describe('redis store: a rotated password file', () => {
  it('reads the password file again when Redis refuses the password in use: both connections come back with the new one, no restart, no password logged', { timeout: 20_000 }, async () => {
    const OLD = 'old-Pass-hunter4';
    const NEW = 'new-Pass-hunter5';
    const server = await startRedis(['--requirepass', OLD]);
    const dir = mkdtempSync(join(tmpdir(), 'b2b-redis-rotate-'));
    const admin = new Redis({ path: server.socket, password: OLD, lazyConnect: true });
    const captured = createCaptureLogger();
    const file = join(dir, 'redis-password');
    writeFileSync(file, `${OLD}\n`, { mode: 0o600 });
    const store = await openRedisStore({ url: server.url, passwordFile: file, logger: captured.logger, reconnectMaxDelayMs: 200 });
    let peer: FleetStore | undefined;
    try {
      const key = freshKey();
      const seen = watcher();
      store.watch!(key, seen.onChange);
      await seen.after(0); // subscribed: the change feed's own connection is open
      assert.equal((await store.publish(key, minted('tok-old'), 0)).ok, true);
      // The rotation as an operator does it: the server's password, then the mounted file; open
      // connections stay authenticated until they drop, here all at once.
      await admin.connect();
      await admin.config('SET', 'requirepass', NEW);
      writeFileSync(file, `${NEW}\n`);
      await admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await admin.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      // Refused with the old password, the file read again, the next attempt with the new one.
      assert.equal((await eventually(() => store.read(key)))?.token, 'tok-old');
      const calls = seen.calls;
      peer = await openRedisStore({ url: server.url, password: NEW, logger: createCaptureLogger().logger });
      assert.equal((await peer.publish(key, minted('tok-new'), 1)).ok, true);
      await seen.after(calls); // the subscriber came back too, with the new password
      assert.match(captured.text(), /the password file holds another, used from the next connection/);
      assert.ok(!captured.text().includes('hunter4') && !captured.text().includes('hunter5'), captured.text());
    } finally {
      await peer?.close();
      await store.close();
      admin.disconnect();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('redis store: authentication and TLS', () => {
  let server: RealRedis;
  let tcp: Awaited<ReturnType<typeof forwardToSocket>>;
  let tlsTcp: Awaited<ReturnType<typeof forwardToSocket>>;
  let dir: string;
  const PASSWORD = 'right-Pass-hunter2';
  before(async () => {
    server = await startRedis(['--requirepass', PASSWORD]);
    tcp = await forwardToSocket(server.socket);
    tlsTcp = await forwardToSocket(server.socket, { tls: true });
    dir = mkdtempSync(join(tmpdir(), 'b2b-redis-auth-'));
  });
  after(async () => {
    await tcp.close();
    await tlsTcp.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Publishes and reads back through a store opened with `options`. */
  const roundTrip = async (options: Partial<RedisStoreOptions> & { url: string }) => {
    const store = await open(options);
    try {
      const key = freshKey();
      assert.deepEqual(await store.publish(key, minted('tok-auth'), 0), { ok: true, version: 1 });
      assert.equal((await store.read(key))?.token, 'tok-auth');
    } finally {
      await store.close();
    }
  };

  it('authenticates with a password given as an option, read from a file, or written in the URL', async () => {
    await roundTrip({ url: server.url, password: PASSWORD });
    const file = join(dir, 'redis-password');
    writeFileSync(file, `${PASSWORD}\n`, { mode: 0o600 });
    await roundTrip({ url: server.url, passwordFile: file });
    await roundTrip({ url: `redis://:${encodeURIComponent(PASSWORD)}@127.0.0.1:${tcp.port}` });
  });

  it('refuses a wrong password with a FleetStoreError that carries no password, in its message, its properties or the log', async () => {
    const captured = createCaptureLogger();
    for (const options of [{ password: 'wrong-Pass-hunter3' }, { url: `redis://default:wrong-Pass-hunter3@127.0.0.1:${tcp.port}` }]) {
      const store = await openRedisStore({ url: server.url, logger: captured.logger, ...options });
      try {
        const err = await store.read(freshKey()).then(() => assert.fail('read with a wrong password'), (e: unknown) => e);
        assert.ok(err instanceof FleetStoreError);
        assert.equal(err.operation, 'read');
        assert.match(err.message, /WRONGPASS|NOAUTH|invalid/i, 'the message says why');
        assert.ok(!inspect(err, { depth: 10, showHidden: true }).includes('hunter3'), inspect(err));
      } finally {
        await store.close();
      }
    }
    assert.match(captured.text(), /WRONGPASS|NOAUTH|invalid/i, 'the connection error was logged');
    assert.ok(!captured.text().includes('hunter3'), captured.text());
  });

  it('connects over rediss:// with the CA from caFile, and refuses the server without it', async () => {
    const { caFile } = await testTls();
    await roundTrip({ url: `rediss://localhost:${tlsTcp.port}`, caFile, password: PASSWORD });
    const store = await open({ url: `rediss://localhost:${tlsTcp.port}`, password: PASSWORD, operationTimeoutMs: 1_000 });
    try {
      await assert.rejects(store.read(freshKey()), (err: unknown) => err instanceof FleetStoreError && /certificate/i.test(err.message));
    } finally {
      await store.close();
    }
  });

  it('keeps the record and the token out of a refused command\'s error', async () => {
    // An ACL user that may read but not run scripts: the refusal names the command, and ioredis's
    // error object carries the script's arguments, the token among them.
    const limited = await startRedis(['--user', ...'reader on >reader-pass ~* &* -@all +get +set +ping'.split(' ')]);
    const limitedTcp = await forwardToSocket(limited.socket);
    const store = await open({ url: `redis://reader:reader-pass@127.0.0.1:${limitedTcp.port}` });
    try {
      const err = await store.publish(freshKey(), minted('tok-SECRET-1234'), 0).then(() => assert.fail('published without EVALSHA'), (e: unknown) => e);
      assert.ok(err instanceof FleetStoreError);
      assert.equal(err.operation, 'publish');
      assert.match(err.message, /NOPERM/);
      assert.ok(!inspect(err, { depth: 10, showHidden: true }).includes('tok-SECRET-1234'), inspect(err, { depth: 10 }));
    } finally {
      await store.close();
      await limitedTcp.close();
      await limited.close();
    }
  });
});

describe('redis store: error events (T86)', () => {
  it('prints nothing of its own on stderr while Redis is unreachable: both connections\' errors reach the logger', () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-redis-gone-'));
    try {
      // A socket nobody listens on; a watch opens the subscriber connection too.
      const script = `
        import { openRedisStore } from ${JSON.stringify(new URL('../../src/fleet/redis-store.ts', import.meta.url).href)};
        const lines = [];
        const log = (message) => lines.push(message);
        const logger = { level: 'debug', error: log, warn: log, info: log, debug: log };
        const store = await openRedisStore({ url: 'unix://${join(dir, 'none.sock')}', logger, reconnectMaxDelayMs: 20 });
        store.watch('b2b-sidecar.gone', () => {});
        await new Promise((resolve) => setTimeout(resolve, 500));
        await store.close();
        process.stdout.write(JSON.stringify(lines));`;
      const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(child.status, 0, child.stderr);
      assert.equal(child.stderr, '', 'the client wrote on stderr itself');
      const lines = JSON.parse(child.stdout) as string[];
      assert.ok(lines.includes('fleet store: Redis connection error'), child.stdout);
      assert.ok(lines.includes('fleet store: Redis subscriber connection error'), child.stdout);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
