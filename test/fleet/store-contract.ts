import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fleetRecordKey, type MintedRecord } from '../../src/fleet/fleet-record.js';
import type { FleetStore } from '../../src/fleet/fleet-store.js';

/**
 * What every engine of src/fleet/ must do, the same way (fleet-store.ts): each engine's test calls
 * this with a store on a real server (or file) of its own, so the fleet source can rely on one
 * behaviour whatever `fleet.store` says. `open` gives two stores on the same backing (two
 * replicas); `close` ends the backing.
 */
export function describeStoreContract(name: string, open: () => Promise<{ a: FleetStore; b: FleetStore; close: () => Promise<void> }>): void {
  describe(`fleet store contract: ${name}`, () => {
    let a: FleetStore;
    let b: FleetStore;
    let close: () => Promise<void>;
    let n = 0;
    /** A fresh key per test: the tests share one backing. */
    const key = () => fleetRecordKey('https://vendor.test/', `key-${name}-${++n}`);
    const minted = (token: string, extra: Partial<MintedRecord> = {}): MintedRecord => ({
      token, lifetimeSeconds: 900, mintedAtWall: 1_790_000_000_000, mintedBy: 'host-a/1', ...extra,
    });

    before(async () => ({ a, b, close } = await open()));
    after(async () => {
      await a.close();
      await b.close();
      await a.close(); // idempotent
      await close();
    });

    it('reads nothing before the first publish, then what was published, from either replica', async () => {
      const k = key();
      assert.equal(await a.read(k), undefined);
      assert.deepEqual(await a.publish(k, minted('tok-1'), 0), { ok: true, version: 1 });
      const seen = await b.read(k);
      assert.equal(seen?.token, 'tok-1');
      assert.equal(seen?.version, 1);
      assert.equal(seen?.lifetimeSeconds, 900);
      assert.equal(seen?.mintedAtWall, 1_790_000_000_000);
      assert.equal(seen?.mintedBy, 'host-a/1');
      assert.equal(seen?.invalid, undefined);
    });

    it('publishes only on the version it saw: an older result never overwrites a newer one', async () => {
      const k = key();
      assert.equal((await a.publish(k, minted('tok-1'), 0)).ok, true);
      assert.deepEqual(await b.publish(k, minted('tok-2'), 1), { ok: true, version: 2 });
      // a minted from version 1 too, and lost: the store keeps b's token and tells a what it holds.
      const lost = await a.publish(k, minted('tok-late'), 1);
      assert.equal(lost.ok, false);
      assert.equal(lost.ok === false && lost.current?.token, 'tok-2');
      assert.equal((await a.read(k))?.token, 'tok-2');
      // A first publish when a record exists loses too.
      assert.equal((await b.publish(k, minted('tok-first'), 0)).ok, false);
    });

    it('lets one of two concurrent publishes on one version win, never both', async () => {
      const k = key();
      await a.publish(k, minted('tok-1'), 0);
      const results = await Promise.all([a.publish(k, minted('tok-a'), 1), b.publish(k, minted('tok-b'), 1)]);
      assert.equal(results.filter((r) => r.ok).length, 1);
      const stored = await a.read(k);
      assert.equal(stored?.version, 2);
      assert.equal(stored?.token, results[0]!.ok ? 'tok-a' : 'tok-b');
    });

    it('gives the claim to one holder at a time, extends it for its holder, and frees it on release', async () => {
      const k = key();
      assert.equal(await a.claim(k, 'a', 30_000), true);
      assert.equal(await b.claim(k, 'b', 30_000), false);
      assert.equal(await a.claim(k, 'a', 30_000), true, 'the holder may extend its claim');
      await b.release(k, 'b'); // not b's: nothing happens
      assert.equal(await b.claim(k, 'b', 30_000), false);
      await a.release(k, 'a');
      assert.equal(await b.claim(k, 'b', 30_000), true);
    });

    it('gives one of two concurrent claims to one holder', async () => {
      const k = key();
      const won = await Promise.all([a.claim(k, 'a', 30_000), b.claim(k, 'b', 30_000)]);
      assert.deepEqual(won.filter(Boolean).length, 1);
    });

    it('replaces a claim whose holder died once it lapses', async () => {
      const k = key();
      assert.equal(await a.claim(k, 'a', 300), true);
      assert.equal(await b.claim(k, 'b', 30_000), false);
      await new Promise((resolve) => setTimeout(resolve, 1_200)); // the store's own time: no clock to inject
      assert.equal(await b.claim(k, 'b', 30_000), true);
    });

    it('invalidates only the version it names: a fresher token is never wiped', async () => {
      const k = key();
      await a.publish(k, minted('tok-1'), 0);
      await b.publish(k, minted('tok-2'), 1);
      assert.equal(await a.invalidate(k, 1), false, 'version 1 is gone: nothing to mark');
      assert.equal((await b.read(k))?.invalid, undefined);
      assert.equal(await a.invalidate(k, 2), true);
      const marked = await b.read(k);
      assert.equal(marked?.invalid, true);
      assert.equal(marked?.token, 'tok-2');
      // The next renewal publishes on the marked version.
      const renewed = await b.publish(k, minted('tok-3'), marked!.version);
      assert.equal(renewed.ok, true);
      assert.equal((await a.read(k))?.invalid, undefined);
    });

    it('keeps two keys apart', async () => {
      const k1 = key();
      const k2 = key();
      await a.publish(k1, minted('tok-one'), 0);
      assert.equal(await a.read(k2), undefined);
      assert.equal(await a.claim(k1, 'a', 30_000), true);
      assert.equal(await b.claim(k2, 'b', 30_000), true);
    });
  });
}
