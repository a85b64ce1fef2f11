import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { FakeClock } from '../helpers/fake-clock.js';
import { send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startVendor, type Rule } from '../helpers/vendors.js';

/**
 * The 401 path through real sidecars (answer-rules.ts): revocations heal without clients
 * seeing 401s, a wrong token.attach is named, another holder of the key is detected. Sidecars run
 * on a fake clock moved past the 401 renewal interval between steps, so nothing waits for real.
 */
const PROBE = '/pub/b2b/v1/objects/obj-42';
const STEP_MS = 1_100;

async function sidecar(t: TestContext, baseUrl: string, clock: FakeClock): Promise<RunningSidecar> {
  const s = await startSidecar({ baseUrl, clock });
  t.after(() => s.stop());
  await waitReady(s);
  return s;
}

/** A request whose answer may wait for a renewal deferred on the fake clock: the clock moves until it is answered. */
async function sendPumping(clock: FakeClock, port: number, path: string): Promise<number> {
  let done = false;
  const answer = send(port, { path }).finally(() => { done = true; });
  for (let i = 0; i < 400 && !done; i++) {
    clock.advance(100);
    await new Promise((r) => setTimeout(r, 5));
  }
  return (await answer).status;
}

async function sample(s: RunningSidecar, name: string): Promise<number> {
  const line = (await s.sidecar.registry.metrics()).split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{credential="default"} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

describe('upstream 401s judged by the token\'s history', () => {
  it('after an endpoint answered 401 for its own reasons, six revocations still reach clients as 200s', async (t) => {
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const clock = new FakeClock();
    const s = await sidecar(t, sim.baseUrl, clock);
    assert.equal((await send(s.port, { path: PROBE })).status, 200);
    for (let i = 0; i < 2; i++) {
      clock.advance(STEP_MS);
      assert.equal((await send(s.port, { path: '/pub/b2b/v1/status/401' })).status, 401);
    }
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      clock.advance(STEP_MS);
      sim.faults.revokeAll();
      statuses.push(await sendPumping(clock, s.port, PROBE));
    }
    // Measured before the rule was reworked: 200, 401, 200, 401, 401, 200.
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 200]);
    assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 0);
  });

  it('a token.attach the service does not accept: an error naming token.attach and the doctor command, the gauge, /readyz warnings; all cleared once requests succeed', async (t) => {
    let accepts: 'X-Access-Token' | 'Authorization' = 'X-Access-Token';
    const rule: Rule = (p) => {
      const token = accepts === 'X-Access-Token' ? p.header('X-Access-Token') : p.header('Authorization')?.replace(/^Bearer /, '');
      return p.issued(token) ? undefined : { status: 401, body: { message: 'Unauthorized' } };
    };
    const vendor = await startVendor(rule);
    t.after(() => vendor.close());
    const clock = new FakeClock();
    const s = await sidecar(t, vendor.url, clock);
    // Two paths: a fresh token refused on both, nothing succeeding, is evidence against token.attach.
    for (const path of ['/pub/b2b/v1/objects/obj-43', `${PROBE}?x=1`, '/pub/b2b/v1/objects/obj-43', `${PROBE}?x=1`]) {
      clock.advance(60_000); // past the slowed-down interval: each request may renew
      assert.equal((await send(s.port, { path })).status, 401);
    }
    const error = s.log.lines().find((l) => l.level === 'error' && String(l.message).includes('token.attach'));
    assert.ok(error, s.log.text());
    assert.match(String(error.message), /b2b-sidecar doctor --config <config file> --probe \/pub\/b2b\/v1\/objects\/obj-42 --discover-attach/);
    assert.equal(s.log.lines().filter((l) => l.level === 'error' && String(l.message).includes('token.attach')).length, 1, 'said once per episode');
    assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 1);
    const ready = await send(s.adminPort, { path: '/readyz' });
    assert.equal(ready.status, 200, 'readiness stays: a 401 may be one endpoint\'s own answer');
    assert.match(String(ready.json<{ warnings: string[] }>().warnings), /token\.attach/);
    const issuedWhileSuspect = vendor.tokens.length;
    assert.ok(issuedWhileSuspect <= 6, `no gentoken storm: ${issuedWhileSuspect}`);

    accepts = 'Authorization'; // the vendor now takes what the sidecar sends
    clock.advance(60_000);
    assert.equal((await send(s.port, { path: PROBE })).status, 200);
    assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 0);
    assert.equal((await send(s.adminPort, { path: '/readyz' })).json<{ warnings?: string[] }>().warnings, undefined);
    assert.ok(s.log.lines().some((l) => l.message === 'the service accepts the token again; token.attach is no longer suspect'));
  });

  it('two sidecars sharing one ApiKey at a service that keeps one token per key: both detect the other, clients see no 401, gentoken stays bounded', async (t) => {
    // Minting a token revokes the previous one for the key, as such services do.
    let vendor: Awaited<ReturnType<typeof startVendor>>;
    const rule: Rule = (p) => {
      const token = p.header('Authorization')?.replace(/^Bearer /, '');
      return token !== undefined && token === vendor.tokens.at(-1) ? undefined : { status: 401, body: { message: 'token revoked' } };
    };
    vendor = await startVendor(rule);
    t.after(() => vendor.close());
    const clock = new FakeClock();
    const a = await sidecar(t, vendor.url, clock);
    assert.equal((await send(a.port, { path: PROBE })).status, 200);
    const b = await sidecar(t, vendor.url, clock);
    const statuses: number[] = [];
    for (let round = 0; round < 5; round++) {
      for (const s of [b, a]) {
        clock.advance(STEP_MS);
        statuses.push(await sendPumping(clock, s.port, PROBE));
      }
    }
    assert.ok(statuses.every((x) => x === 200), `clients saw ${statuses}`);
    for (const s of [a, b]) {
      assert.ok(await sample(s, 'b2b_sidecar_token_superseded_total') >= 3);
      const warning = s.log.lines().find((l) => l.level === 'warn' && String(l.message).includes('another process is probably obtaining tokens with the same ApiKey'));
      assert.ok(warning, s.log.text());
      assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 0, 'not mistaken for a wrong token.attach');
    }
    // One token per client request at most, each sidecar (a storm would be many per request).
    assert.ok(vendor.tokens.length <= 2 + statuses.length, `${vendor.tokens.length} tokens for ${statuses.length} requests`);
  });
});

describe('two replicas on one ApiKey at a service that keeps one token per key, under steady traffic', () => {
  it('no 503 ever; gentoken bounded by each budget; both see superseded; one replica ends up passing 401s back (the README figures)', { timeout: 120_000 }, async (t) => {
    let vendor: Awaited<ReturnType<typeof startVendor>>;
    const rule: Rule = (p) => {
      const token = p.header('Authorization')?.replace(/^Bearer /, '');
      return token !== undefined && token === vendor.tokens.at(-1) ? undefined : { status: 401, body: { message: 'token revoked' } };
    };
    vendor = await startVendor(rule);
    t.after(() => vendor.close());
    const clock = new FakeClock();
    const a = await sidecar(t, vendor.url, clock);
    const b = await sidecar(t, vendor.url, clock);
    const statuses = { a: new Map<number, number>(), b: new Map<number, number>() };
    const startedAt = clock.now();
    // 480 requests to each replica, 250 ms apart (plus the time a request waits for a renewal).
    for (let i = 0; i < 480; i++) {
      for (const [name, s] of [['a', a], ['b', b]] as const) {
        const status = await sendPumping(clock, s.port, PROBE);
        statuses[name].set(status, (statuses[name].get(status) ?? 0) + 1);
      }
      clock.advance(250);
    }
    const minutes = (clock.now() - startedAt) / 60_000;
    const summary = JSON.stringify({ a: [...statuses.a], b: [...statuses.b], gentoken: vendor.tokens.length, minutes: Math.round(minutes * 10) / 10 });
    for (const s of [statuses.a, statuses.b]) assert.equal(s.get(503) ?? 0, 0, summary);
    // The start, then at most token.maxGentokenPerMinute (12) in any minute each for 401s.
    assert.ok(vendor.tokens.length <= 2 + 2 * 12 * Math.ceil(minutes), summary);
    for (const s of [a, b]) assert.ok(await sample(s, 'b2b_sidecar_token_superseded_total') >= 3, summary);
    const unauthorized = (statuses.a.get(401) ?? 0) + (statuses.b.get(401) ?? 0);
    assert.ok(unauthorized > 0, `once a budget is spent its replica passes the 401s back: ${summary}`);
    t.diagnostic(summary);
  });
});
