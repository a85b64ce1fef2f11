import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fleetRecordKey } from '../../src/fleet/fleet-record.js';
import { FakeClock, flush } from '../helpers/fake-clock.js';
import { FLEET_API_KEY, FLEET_BASE_URL, OneLiveTokenVendor, replica, sqliteOnTemp, SwitchableStore } from '../helpers/fleet.js';

const KEY = fleetRecordKey(FLEET_BASE_URL, FLEET_API_KEY);
const settle = async () => {
  for (let i = 0; i < 4; i++) await flush();
};

describe('fleet source: several sidecars share one token', () => {
  it('makes about one gentoken call per lifetime for three replicas, each holding the one live token', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(60);
    const { store, path } = await sqliteOnTemp(clock);
    const others = [await sqliteOnTemp(clock, path), await sqliteOnTemp(clock, path)];
    let r = 0;
    const random = () => ((r = (r * 7 + 3) % 10) / 10);
    const replicas = [replica('a', store, vendor, clock, { random }), replica('b', others[0]!.store, vendor, clock, { random }), replica('c', others[1]!.store, vendor, clock, { random })];
    for (const x of replicas) x.manager.start();
    await settle();
    let stale = 0;
    for (let s = 0; s < 600; s++) {
      await clock.advanceAsync(1_000, settle);
      for (const x of replicas) if (!vendor.accepts(FLEET_API_KEY, x.manager.current()?.value)) stale++;
    }
    // 600 s of 60 s tokens renewed at 0.66: one process alone makes ~16 calls.
    assert.ok(vendor.calls <= 17, `gentoken calls: ${vendor.calls}`);
    // A follower picks a renewal up within the poll interval (1 s): at most one stale sample per replica per renewal.
    assert.ok(stale <= 2 * vendor.calls, `stale samples: ${stale}`);
    for (const x of replicas) await x.manager.stop();
  });

  it('never lets an older result overwrite a newer one: a slow minter whose claim lapsed loses and adopts the store\'s token', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store, path } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock);
    vendor.hold(); // a's gentoken hangs
    a.manager.start();
    await settle();
    assert.equal(vendor.calls, 1);
    // a's claim lapses; b finds nothing, claims, mints and publishes.
    await clock.advanceAsync(13_000, settle);
    const b = replica('b', (await sqliteOnTemp(clock, path)).store, vendor, clock);
    const held = vendor.calls;
    vendor.release(); // a's late answer arrives first in the vendor's order, but b publishes first
    b.manager.start();
    await settle();
    // whatever the order, one version per publish, and the store's token is the one both use
    const record = await store.read(KEY);
    assert.ok(record);
    assert.equal(a.manager.current()?.value, record.token);
    assert.equal(b.manager.current()?.value, record.token);
    assert.ok(vendor.calls <= held + 1);
    await a.manager.stop();
    await b.manager.stop();
  });

  it('drops a result that lost the compare-and-set and adopts the newer shared token', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock);
    vendor.hold();
    a.manager.start();
    await settle();
    // While a's call hangs, a peer publishes version 1 (a read version 0).
    await store.publish(KEY, { token: 'peer-token-xxxxxxxxxxxx', lifetimeSeconds: 900, mintedAtWall: clock.wallNow(), mintedBy: 'peer' }, 0);
    vendor.release();
    await settle();
    const record = await store.read(KEY);
    assert.equal(record?.token, 'peer-token-xxxxxxxxxxxx', 'the older read never overwrites the newer record');
    assert.equal(record?.version, 1);
    assert.equal(a.manager.current()?.value, 'peer-token-xxxxxxxxxxxx');
    assert.ok(a.log.lines().some((l) => String(l.message).includes('a peer published first')));
    await a.manager.stop();
  });

  it('a follower\'s 401 adopts the fresher shared token and never wipes it (no gentoken call)', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store, path } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock, { pollIntervalMs: 600_000 });
    const b = replica('b', (await sqliteOnTemp(clock, path)).store, vendor, clock, { pollIntervalMs: 600_000 });
    a.manager.start();
    await settle();
    b.manager.start();
    await settle();
    assert.equal(vendor.calls, 1);
    const old = b.manager.current()!;
    // a renews (a 401 of its own): the vendor revokes the token b holds.
    const fresh = await a.manager.invalidate(a.manager.current()!.generation, '/pub/b2b/v1/x');
    assert.ok(fresh);
    assert.equal(vendor.calls, 2);
    const v2 = await store.read(KEY);
    assert.equal(v2?.version, 2);
    // b's request with the old token gets 401: it adopts version 2, no call, nothing marked.
    const replay = await b.manager.invalidate(old.generation, '/pub/b2b/v1/x');
    assert.equal(replay?.value, fresh.value);
    assert.equal(vendor.calls, 2);
    const after = await store.read(KEY);
    assert.equal(after?.version, 2);
    assert.equal(after?.invalid, undefined);
    await a.manager.stop();
    await b.manager.stop();
  });

  it('replaces a dead claimant once its claim lapses, well inside the token\'s life', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(120);
    const { store } = await sqliteOnTemp(clock);
    const claims: string[] = [];
    const a = replica('a', store, vendor, clock, { onClaim: (result) => claims.push(result) });
    a.manager.start();
    await settle();
    const first = a.manager.current()!;
    // A peer died holding the claim just before the renewal falls due.
    await clock.advanceAsync(70_000, settle);
    assert.equal(await store.claim(KEY, 'dead-peer', 12_000), true);
    // The renewal falls due at ~75 s, inside the dead peer's claim (until 82 s): a keeps its token and waits.
    await clock.advanceAsync(11_000, settle);
    assert.equal(vendor.calls, 1, 'no call while a peer holds the claim');
    assert.equal(a.manager.current()?.value, first.value);
    assert.equal(a.manager.liveness().live, true, 'waiting for a peer is not a stuck loop');
    await clock.advanceAsync(2_500, settle); // the claim lapsed at 82 s: taken over within a second
    assert.equal(vendor.calls, 2, 'renewed once the dead claim lapsed');
    assert.notEqual(a.manager.current()?.value, first.value);
    assert.equal((await store.read(KEY))?.token, a.manager.current()?.value);
    assert.ok(clock.now() < first.expiresAt);
    assert.deepEqual([claims[0], claims[1], claims.at(-1)], ['won', 'lost', 'won'], 'the claim metric: the first mint, the dead peer\'s claim, the mint after it lapsed');
    assert.ok(claims.length <= 10, `tried again about once a second: ${claims.length}`);
    await a.manager.stop();
  });

  it('releases a held claim at once on stop (SIGTERM): a peer need not wait for it to lapse', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock);
    vendor.hold();
    a.manager.start();
    await settle();
    assert.equal(await store.claim(KEY, 'peer', 12_000), false, 'a holds the claim while minting');
    await a.manager.stop();
    assert.equal(await store.claim(KEY, 'peer', 12_000), true);
    vendor.release();
  });

  it('writes the shared token to token.file and shows the record in status', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store, path } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock);
    a.manager.start();
    await settle();
    const file = join(mkdtempSync(join(tmpdir(), 'b2b-fleet-file-')), 'token');
    const b = replica('b', (await sqliteOnTemp(clock, path)).store, vendor, clock, { file });
    b.manager.start();
    await settle();
    await clock.advanceAsync(1_000, settle);
    assert.equal(vendor.calls, 1);
    // The file is written on the real file system: wait for the write (I/O, not token timing).
    for (let i = 0; i < 200; i++) {
      try {
        if (readFileSync(file, 'utf8') !== '') break;
      } catch {
        // not written yet
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(readFileSync(file, 'utf8'), a.manager.current()!.value);
    const fleet = b.manager.view().fleet;
    assert.equal(fleet?.store, 'sqlite');
    assert.equal(fleet?.state, 'up');
    assert.equal(fleet?.source, 'shared');
    assert.equal(fleet?.version, 1);
    assert.equal(fleet?.mintedBy, 'a');
    assert.equal(fleet?.credential, 'default');
    assert.ok(!JSON.stringify(b.manager.view()).includes(a.manager.current()!.value), 'no token in status');
    await a.manager.stop();
    await b.manager.stop();
  });
});

describe('fleet source: the store down', () => {
  it('starts with the store unreachable (onStoreDown local): a local token at once, published once the store is back', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const dir = mkdtempSync(join(tmpdir(), 'b2b-fleet-'));
    const { store } = await sqliteOnTemp(clock, join(dir, 'later', 'fleet.db'));
    const a = replica('a', store, vendor, clock);
    a.manager.start();
    await settle();
    assert.equal(a.manager.status().ready, true);
    assert.equal(a.manager.view().fleet?.state, 'down');
    assert.equal(a.manager.view().fleet?.source, 'local');
    assert.ok(a.manager.view().warnings.some((w) => w.includes('fleet store (sqlite) is unreachable')));
    mkdirSync(join(dir, 'later'));
    await clock.advanceAsync(2_000, settle);
    const record = await store.read(KEY);
    assert.equal(record?.token, a.manager.current()?.value);
    assert.equal(a.manager.view().fleet?.source, 'shared');
    assert.equal(a.manager.view().fleet?.state, 'up');
    assert.equal(vendor.calls, 1);
    assert.equal(a.log.lines().filter((l) => l.message === 'fleet store unreachable; the current token keeps serving').length, 1, 'one line per transition');
    await a.manager.stop();
  });

  it('starts with the store unreachable (onStoreDown wait): not ready, naming the store, until it returns', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const dir = mkdtempSync(join(tmpdir(), 'b2b-fleet-'));
    const { store } = await sqliteOnTemp(clock, join(dir, 'later', 'fleet.db'));
    const a = replica('a', store, vendor, clock, { onStoreDown: 'wait' });
    a.manager.start();
    await settle();
    assert.equal(vendor.calls, 0);
    const status = a.manager.status();
    assert.equal(status.ready, false);
    assert.match(status.reason ?? '', /fleet store \(sqlite\) is unreachable/);
    await assert.rejects(Promise.resolve(a.manager.acquire()), /fleet store \(sqlite\)/);
    mkdirSync(join(dir, 'later'));
    await clock.advanceAsync(2_000, settle);
    assert.equal(vendor.calls, 1);
    assert.equal(a.manager.status().ready, true);
    await a.manager.stop();
  });

  it('onStoreDown local: keeps the token past its renewal point, renews alone near its end, and rejoins the store after', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(100);
    const inner = await sqliteOnTemp(clock);
    const store = new SwitchableStore(inner.store);
    const errors: string[] = [];
    const a = replica('a', store, vendor, clock, { onStoreError: (operation) => errors.push(operation) });
    a.manager.start();
    await settle();
    assert.equal(vendor.calls, 1);
    store.down = true;
    await clock.advanceAsync(70_000, settle); // past renewAt (66 s)
    assert.equal(vendor.calls, 1, 'no renewal alone at the usual point: the store may come back');
    assert.equal(a.manager.status().ready, true);
    await clock.advanceAsync(20_000, settle); // halfway from 66 s to the end: renewed alone
    assert.equal(vendor.calls, 2);
    assert.equal(a.manager.view().fleet?.source, 'local');
    assert.ok(a.log.lines().some((l) => l.message === 'token source: local'));
    assert.ok(errors.length > 0 && errors.every((op) => op === 'read'), `store errors by operation: ${errors.join()}`);
    store.down = false;
    await clock.advanceAsync(2_000, settle);
    const record = await store.read(KEY);
    assert.equal(record?.token, a.manager.current()?.value, 'the local token is published when nothing newer is stored');
    assert.equal(a.manager.view().fleet?.source, 'shared');
    await a.manager.stop();
  });

  it('onStoreDown wait: serves until the token\'s end, then answers naming the store; a newer shared token wins on return', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(100);
    const inner = await sqliteOnTemp(clock);
    const store = new SwitchableStore(inner.store);
    const a = replica('a', store, vendor, clock, { onStoreDown: 'wait' });
    a.manager.start();
    await settle();
    store.down = true;
    await clock.advanceAsync(90_000, settle);
    assert.equal(a.manager.status().ready, true);
    await clock.advanceAsync(15_000, settle);
    assert.equal(vendor.calls, 1, 'never renews alone');
    assert.equal(a.manager.status().ready, false);
    assert.match(a.manager.status().reason ?? '', /fleet store \(sqlite\) is unreachable and fleet.onStoreDown is wait/);
    // Meanwhile a peer published a newer token: it wins, no call.
    const v = (await inner.store.read(KEY))!.version;
    await inner.store.publish(KEY, { token: 'peer-newer-xxxxxxxxxxxx', lifetimeSeconds: 100, mintedAtWall: clock.wallNow(), mintedBy: 'peer' }, v);
    store.down = false;
    await clock.advanceAsync(2_000, settle);
    assert.equal(a.manager.current()?.value, 'peer-newer-xxxxxxxxxxxx');
    assert.equal(vendor.calls, 1);
    await a.manager.stop();
  });
});

describe('fleet source: expiry across hosts (docs/traps.md T85)', () => {
  it('takes an adopted token to end the skew allowance before its minter\'s clock says', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(100);
    const { store } = await sqliteOnTemp(clock);
    // A peer minted a 100 s token 90 s ago by its clock.
    await store.publish(KEY, { token: 'peer-token-xxxxxxxxxxxx', lifetimeSeconds: 100, mintedAtWall: clock.wallNow() - 90_000, mintedBy: 'peer' }, 0);
    const a = replica('a', store, vendor, clock, { clockSkewMs: 2_000 });
    a.manager.start();
    await settle();
    const token = a.manager.current();
    assert.equal(token?.value, 'peer-token-xxxxxxxxxxxx');
    assert.equal(vendor.calls, 0);
    assert.ok(token.expiresAt <= clock.now() + 8_000, `ends ${token.expiresAt - clock.now()} ms from now, past the safe estimate of 8 s`);
    await a.manager.stop();
  });

  it('does not adopt a shared token whose safe end is already inside the margin: it renews instead', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(100);
    const { store } = await sqliteOnTemp(clock);
    await store.publish(KEY, { token: 'peer-token-xxxxxxxxxxxx', lifetimeSeconds: 100, mintedAtWall: clock.wallNow() - 96_000, mintedBy: 'peer' }, 0);
    const a = replica('a', store, vendor, clock, { clockSkewMs: 2_000 });
    a.manager.start();
    await settle();
    assert.equal(vendor.calls, 1);
    assert.notEqual(a.manager.current()?.value, 'peer-token-xxxxxxxxxxxx');
    assert.equal((await store.read(KEY))?.version, 2);
    await a.manager.stop();
  });
});

describe('fleet source: a late 401 for an older token', () => {
  it('replays with the shared token held instead of minting (a mint would revoke every peer\'s token)', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store, path } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock);
    const b = replica('b', (await sqliteOnTemp(clock, path)).store, vendor, clock);
    a.manager.start();
    await settle();
    b.manager.start();
    await settle();
    const old = b.manager.current()!;
    await a.manager.invalidate(a.manager.current()!.generation, '/pub/b2b/v1/x');
    await clock.advanceAsync(1_500, settle); // b's poll adopts version 2
    const adopted = b.manager.current()!;
    assert.ok(adopted.generation > old.generation);
    assert.equal(vendor.calls, 2);
    // A request b sent with the old token before the adoption comes back 401 now.
    const replay = await b.manager.invalidate(old.generation, '/pub/b2b/v1/x');
    assert.equal(replay?.value, adopted.value);
    assert.equal(vendor.calls, 2, 'no call: the shared token is the newest');
    await a.manager.stop();
    await b.manager.stop();
  });
});

describe('fleet source: followers renew with the minter, not before it', () => {
  it('arms an adopted token\'s renewal at renewAt of the minter\'s lifetime; only its end is taken early by the skew', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(100);
    const { store } = await sqliteOnTemp(clock);
    const mintedAtWall = clock.wallNow();
    await store.publish(KEY, { token: 'peer-token-xxxxxxxxxxxx', lifetimeSeconds: 100, mintedAtWall, mintedBy: 'peer' }, 0);
    const a = replica('a', store, vendor, clock, { clockSkewMs: 10_000, pollIntervalMs: 600_000 });
    a.manager.start();
    await settle();
    const next = Date.parse(a.manager.view().nextAttemptAt!);
    // renewAt 0.66 of 100 s, up to 10 % earlier (random 0.5: 3.3 s): 62.7 s after the mint; the skew does not move it.
    assert.equal(next - mintedAtWall, 62_700);
    assert.ok(a.manager.current()!.expiresAt - clock.now() <= 90_000, 'the end is taken 10 s early');
    await a.manager.stop();
  });
});

describe('fleet source: the claim of a short token (docs/traps.md T95)', () => {
  it('cuts the claim\'s margin to a tenth of the token\'s lifetime, so a dead claimant cannot outlive a 4 s token', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(4);
    const { store } = await sqliteOnTemp(clock);
    const ttls: number[] = [];
    const claim = store.claim.bind(store);
    store.claim = (key, holder, ttlMs) => {
      ttls.push(ttlMs);
      return claim(key, holder, ttlMs);
    };
    // fleet.claimMarginSeconds 5 beside a 1 s gentoken deadline: 6 s, longer than the token itself.
    const a = replica('a', store, vendor, clock, { claimMs: 6_000, claimMarginMs: 5_000 });
    a.manager.start();
    await settle();
    const first = a.manager.current()!;
    assert.equal(first.lifetimeSeconds, 4);
    assert.equal(ttls[0], 6_000, 'before any token, the margin of the longest lifetime');
    await clock.advanceAsync(3_000, settle); // the renewal at renewAt 0.66 of 4 s
    assert.equal(vendor.calls, 2);
    assert.equal(ttls[1], 1_000 + 400, 'the deadline and a tenth of 4 s');
    assert.ok(ttls[1]! < first.expiresAt - first.obtainedAt, 'the claim lapses inside the token\'s life');
    await a.manager.stop();
  });
});

describe('fleet source: a waiter behind a peer\'s claim (docs/traps.md T96)', () => {
  it('a 401 waits for a peer\'s claim to lapse as well as for its own call, and is replayed', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock);
    a.manager.start();
    await settle();
    const first = a.manager.current()!;
    // A peer claimed the renewal and stopped (SIGSTOP) before publishing: its 12 s claim outlives
    // the 10 s gentoken deadline a plain waiter would wait.
    assert.equal(await store.claim(KEY, 'stopped-peer', 12_000), true);
    const replay = a.manager.invalidate(first.generation, '/pub/b2b/v1/x');
    let settled: unknown = 'pending';
    replay.then((t) => (settled = t), (e: unknown) => (settled = e));
    await clock.advanceAsync(10_500, settle);
    assert.equal(settled, 'pending', 'still waiting past the gentoken deadline: the claim has not lapsed');
    await clock.advanceAsync(3_000, settle);
    const fresh = await replay;
    assert.ok(fresh, 'replayed with the token minted once the claim lapsed');
    assert.notEqual(fresh.value, first.value);
    assert.equal(vendor.calls, 2);
    await a.manager.stop();
  });
});

describe('fleet source: a minter whose call failed (docs/traps.md T97)', () => {
  it('adopts the token a peer published meanwhile instead of failing its waiters', async () => {
    const clock = new FakeClock();
    const vendor = new OneLiveTokenVendor(900);
    const { store } = await sqliteOnTemp(clock);
    const a = replica('a', store, vendor, clock);
    vendor.hold(); // a claims and calls; then it is stopped past its deadline
    a.manager.start();
    await settle();
    const waiter = a.manager.acquire();
    // A peer took over the lapsed claim and published while a was stopped.
    await store.publish(KEY, { token: 'peer-token-yyyyyyyyyyyy', lifetimeSeconds: 900, mintedAtWall: clock.wallNow(), mintedBy: 'peer' }, 0);
    vendor.timeOutHeld(); // a resumes: its own call has timed out
    await settle();
    const token = await waiter;
    assert.equal(token.value, 'peer-token-yyyyyyyyyyyy', 'the waiter got the peer\'s token, not a 503');
    assert.equal(a.manager.current()?.value, 'peer-token-yyyyyyyyyyyy');
    await a.manager.stop();
  });
});
