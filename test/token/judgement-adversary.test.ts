import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { FakeClock } from '../helpers/fake-clock.js';
import { send, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startVendor, type Rule, type Vendor } from '../helpers/vendors.js';

/**
 * The 401 judgement under a hostile local client (docs/design.md, "Reading the answers"; traps
 * T71 and T72): a vendor that checks tokens, can revoke every token issued so far, and answers some
 * paths, query values and methods with its own 401. The app's ordinary requests must keep being
 * healed (renewal + replay) whatever the hostile client made the sidecar judge. Sidecars run on a
 * fake clock; the vendor answers gentoken at once, so "within one round trip" is "the request that
 * met the revocation is itself replayed".
 */
const OBJECTS = '/pub/b2b/v1/objects';
const MAX_PER_MINUTE = 12; // token.maxGentokenPerMinute's default

interface Revoking {
  vendor: Vendor;
  /** Revokes every token issued so far. */
  revoke(): void;
}

/** A vendor that accepts only tokens it issued after the last revocation; `own` answers 401 by itself for some requests. */
async function revokingVendor(t: TestContext, own: (method: string, url: URL) => boolean): Promise<Revoking> {
  let revokedUpTo = 0;
  let vendor: Vendor | undefined;
  const rule: Rule = (p, req) => {
    const token = p.header('Authorization')?.replace(/^Bearer /, '');
    const index = token === undefined ? -1 : vendor!.tokens.indexOf(token);
    if (index < revokedUpTo) return { status: 401, body: { message: 'Unauthorized' } };
    return own(req.method ?? 'GET', new URL(req.url ?? '/', 'https://vendor.test')) ? { status: 401, body: { message: 'no right to this object' } } : undefined;
  };
  vendor = await startVendor(rule);
  t.after(() => vendor.close());
  return { vendor, revoke: () => { revokedUpTo = vendor!.tokens.length; } };
}

/**
 * A request answered without the fake clock moving: a 401 held for a deferred renewal would wait
 * for ever, so a generous real bound turns that into a failure instead of a hung test.
 */
async function req(port: number, options: { method?: string; path: string }): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${options.method ?? 'GET'} ${options.path}: no answer while the fake clock stood still (a renewal deferred)`)), 10_000);
  });
  try {
    return (await Promise.race([send(port, options), bound])).status;
  } finally {
    clearTimeout(timer);
  }
}

/** A request whose answer may wait for a renewal deferred on the fake clock (setting the scene only): the clock moves until it is answered. */
async function pumped(clock: FakeClock, port: number, options: { method?: string; path: string }): Promise<number> {
  let done = false;
  const answer = send(port, options).finally(() => { done = true; });
  for (let i = 0; i < 400 && !done; i++) {
    clock.advance(100);
    await new Promise((r) => setTimeout(r, 5));
  }
  return (await answer).status;
}

async function sidecar(t: TestContext, vendor: Vendor, clock: FakeClock): Promise<RunningSidecar> {
  const s = await startSidecar({ baseUrl: vendor.url, clock });
  t.after(() => s.stop());
  await waitReady(s);
  return s;
}

describe('a path memory that one query value or method cannot poison', () => {
  it('a refused ?id=deny and a refused DELETE do not stop the app\'s GETs on the same path from being healed after a revocation', { timeout: 120_000 }, async (t) => {
    const v = await revokingVendor(t, (method, url) => url.searchParams.get('id') === 'deny' || method === 'DELETE');
    const clock = new FakeClock();
    const s = await sidecar(t, v.vendor, clock);
    assert.equal(await req(s.port, { path: OBJECTS }), 200);
    assert.equal((await req(s.port, { path: `${OBJECTS}?id=1` })), 200);
    // The hostile client: each refused request judged (renewal, replay refused, then remembered once
    // the fresh token succeeds elsewhere).
    for (let i = 0; i < 3; i++) {
      clock.advance(61_000);
      assert.equal(await pumped(clock, s.port, { path: `${OBJECTS}?id=deny` }), 401);
      assert.equal(await pumped(clock, s.port, { method: 'DELETE', path: OBJECTS }), 401);
      assert.equal(await pumped(clock, s.port, { path: OBJECTS }), 200);
      assert.equal(await pumped(clock, s.port, { path: `${OBJECTS}?id=1` }), 200);
    }
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) {
      clock.advance(2_000);
      // The hostile client again, and the app's traffic elsewhere, then a real revocation.
      assert.equal(await pumped(clock, s.port, { path: `${OBJECTS}?id=deny` }), 401);
      assert.equal(await pumped(clock, s.port, { method: 'DELETE', path: OBJECTS }), 401);
      assert.equal(await pumped(clock, s.port, { path: `${OBJECTS}/other` }), 200);
      v.revoke();
      statuses.push(await req(s.port, { path: i % 2 ? `${OBJECTS}?id=1` : OBJECTS }));
    }
    // Measured before the memory keyed on method and query: 10 of 10 were 401.
    assert.deepEqual(statuses, Array(10).fill(200));
    // The refused ones are still their own answers (and no longer cost a renewal each).
    const before = v.vendor.tokens.length;
    assert.equal((await req(s.port, { path: `${OBJECTS}?id=deny` })), 401);
    assert.equal(await req(s.port, { method: 'DELETE', path: OBJECTS }), 401);
    assert.equal(v.vendor.tokens.length, before, 'remembered: no renewal');
  });

  it('the query parameter the token is attached as, and the order of parameters, do not make new keys', { timeout: 120_000 }, async (t) => {
    const v = await revokingVendor(t, (_method, url) => url.searchParams.get('id') === 'deny');
    const clock = new FakeClock();
    const s = await sidecar(t, v.vendor, clock);
    assert.equal((await req(s.port, { path: `${OBJECTS}/a` })), 200);
    assert.equal((await req(s.port, { path: `${OBJECTS}?id=deny&x=1` })), 401); // judged: one renewal
    assert.equal((await req(s.port, { path: `${OBJECTS}/a` })), 200); // the fresh token works elsewhere
    const before = v.vendor.tokens.length;
    clock.advance(61_000);
    for (const path of [`${OBJECTS}?x=1&id=deny`, `${OBJECTS}?id=deny&x=1&`, `${OBJECTS}?x=1&id=deny`]) {
      assert.equal(await req(s.port, { path }), 401);
    }
    assert.equal(v.vendor.tokens.length, before, 'the same key: no renewal');
  });
});

describe('judging new refused paths costs its own small allowance', () => {
  it('a walk over 50 distinct refused paths with a revocation in the middle: the app sees no 401, gentoken calls stay within the budget', { timeout: 120_000 }, async (t) => {
    const v = await revokingVendor(t, (_method, url) => url.pathname.startsWith(`${OBJECTS}/secret-`));
    const clock = new FakeClock();
    const s = await sidecar(t, v.vendor, clock);
    const app: number[] = [];
    const walk: number[] = [];
    for (let i = 0; i < 50; i++) {
      clock.advance(1_000);
      if (i === 25) v.revoke();
      // The app and the hostile client at once, in either order.
      const [a, w, b] = await Promise.all([
        req(s.port, { path: `${OBJECTS}/obj-${i % 3}` }),
        req(s.port, { path: `${OBJECTS}/secret-${i}` }),
        req(s.port, { path: `${OBJECTS}/obj-${i % 3}?page=${i % 2}` }),
      ]);
      app.push(a, b);
      walk.push(w);
    }
    // Measured before the judgement had its own allowance: the app got 401s after the revocation
    // once the walk had spent token.maxGentokenPerMinute.
    assert.deepEqual([...new Set(app)], [200], `the app saw ${app.join(',')}`);
    assert.deepEqual([...new Set(walk)], [401]);
    // 50 s: inside one budget minute. Judgements (at 0, 2, 6, 14 s: the interval doubles) go only
    // while they leave half of the budget; the revocation's renewal comes from that half.
    assert.ok(v.vendor.tokens.length <= MAX_PER_MINUTE, `${v.vendor.tokens.length} gentoken calls`);
    assert.ok(v.vendor.tokens.length <= MAX_PER_MINUTE / 2 + 1, `${v.vendor.tokens.length} gentoken calls: the start and the judgements within half the budget, and the revocation's renewal`);
  });

  it('five refused paths in a quiet moment, then a revocation: healed by the request that met it, the interval not stretched', { timeout: 120_000 }, async (t) => {
    const v = await revokingVendor(t, (_method, url) => url.pathname.startsWith(`${OBJECTS}/secret-`));
    const clock = new FakeClock();
    const s = await sidecar(t, v.vendor, clock);
    assert.equal((await req(s.port, { path: `${OBJECTS}/obj-1` })), 200);
    for (let i = 0; i < 5; i++) {
      clock.advance(1_500);
      assert.equal((await req(s.port, { path: `${OBJECTS}/secret-${i}` })), 401);
    }
    clock.advance(100);
    v.revoke();
    const before = v.vendor.tokens.length;
    // Measured before: the interval had grown to 16 s and the revocation went unhealed for 15.4 s.
    assert.equal((await req(s.port, { path: `${OBJECTS}/obj-1` })), 200);
    assert.equal(v.vendor.tokens.length, before + 1, 'one renewal');
    // A second revocation a second later heals the same way: the interval is still 1 s.
    clock.advance(1_000);
    v.revoke();
    assert.equal((await req(s.port, { path: `${OBJECTS}/obj-1` })), 200);
  });
});
