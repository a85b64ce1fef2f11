import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import { FakeClock } from '../helpers/fake-clock.js';
import { send, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startVendor, VENDORS, type Rule, type Vendor } from '../helpers/vendors.js';

/**
 * The answer rules (answer-rules.ts) through real sidecars in front of HTTPS test vendors
 * (test/helpers/vendors.ts): an endpoint's own 401 costs the other clients nothing, and a wrong
 * token.attach is noticed whatever status the vendor answers a missing token with. Sidecars run on
 * a fake clock so the 401 renewal interval passes without waiting.
 */
const OBJECTS = '/pub/b2b/v1/objects';

async function sidecar(t: TestContext, vendor: Vendor, clock: FakeClock, overrides: Record<string, unknown> = {}): Promise<RunningSidecar> {
  const s = await startSidecar({ baseUrl: vendor.url, clock, overrides });
  t.after(() => s.stop());
  await waitReady(s);
  return s;
}

async function sample(s: RunningSidecar, name: string): Promise<number> {
  const line = (await s.sidecar.registry.metrics()).split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{credential="default"} `));
  return Number(line?.split(' ')[1] ?? NaN);
}

async function readyz(s: RunningSidecar): Promise<{ status: number; warnings: string[] }> {
  const r = await send(s.adminPort, { path: '/readyz' });
  return { status: r.status, warnings: r.json<{ warnings?: string[] }>().warnings ?? [] };
}

const attachErrors = (s: RunningSidecar) => s.log.lines().filter((l) => l.level === 'error' && String(l.message).includes('token.attach'));

describe('an endpoint\'s own 401 beside other clients\' traffic', () => {
  it('one client alternating an allowed and a refused object: the other client never gets a 503, at most one gentoken call, no superseded signal', { timeout: 30_000 }, async (t) => {
    // The vendor answers 401 for one object whatever the token (an object-level refusal), and
    // checks the token everywhere else.
    const rule: Rule = (p, req) => {
      const token = p.header('Authorization')?.replace(/^Bearer /, '');
      if (!p.issued(token)) return { status: 401, body: { message: 'Unauthorized' } };
      return req.url?.startsWith(`${OBJECTS}/secret`) ? { status: 401, body: { message: 'no right to this object' } } : undefined;
    };
    const vendor = await startVendor(rule);
    t.after(() => vendor.close());
    const clock = new FakeClock();
    const s = await sidecar(t, vendor, clock);
    const other: number[] = [];
    const ordinary: number[] = [];
    const refused: number[] = [];
    // 40 rounds 1.1 s apart (past the 1 s renewal interval each time): 44 s, inside one budget minute.
    for (let round = 0; round < 40; round++) {
      clock.advance(1_100);
      const [a, b, c] = await Promise.all([
        send(s.port, { path: `${OBJECTS}/obj-42` }),
        send(s.port, { path: `${OBJECTS}/secret?v=1` }),
        send(s.port, { path: `${OBJECTS}/obj-7` }),
      ]);
      ordinary.push(a.status);
      refused.push(b.status);
      other.push(c.status);
    }
    assert.deepEqual([...new Set(other)], [200], `the other client saw ${other}`);
    assert.deepEqual([...new Set(ordinary)], [200]);
    assert.deepEqual([...new Set(refused)], [401], 'the endpoint\'s own 401 reaches its client');
    assert.ok(vendor.tokens.length <= 2, `${vendor.tokens.length} tokens: the start and at most one renewal`);
    assert.equal(await sample(s, 'b2b_sidecar_token_superseded_total'), 0);
    assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 0);
    assert.ok(!s.log.text().includes('another process is probably obtaining tokens'));
    assert.deepEqual((await readyz(s)).warnings, []);
    const remembered = s.log.lines().filter((l) => String(l.message).startsWith('the service answers 401 on this path even with a fresh token'));
    assert.equal(remembered.length, 1, 'said once');
    assert.equal(remembered[0]!.path, `${OBJECTS}/secret`, 'the path without its query');
  });

  it('once the refused object is granted, its requests succeed and the path is forgotten', async (t) => {
    let granted = false;
    const rule: Rule = (p, req) => {
      if (!p.issued(p.header('Authorization')?.replace(/^Bearer /, ''))) return { status: 401, body: { message: 'Unauthorized' } };
      return !granted && req.url === `${OBJECTS}/secret` ? { status: 401, body: { message: 'no right to this object' } } : undefined;
    };
    const vendor = await startVendor(rule);
    t.after(() => vendor.close());
    const clock = new FakeClock();
    const s = await sidecar(t, vendor, clock);
    for (let i = 0; i < 3; i++) {
      clock.advance(1_100);
      assert.equal((await send(s.port, { path: `${OBJECTS}/obj-42` })).status, 200);
      assert.equal((await send(s.port, { path: `${OBJECTS}/secret` })).status, 401);
    }
    granted = true;
    assert.equal((await send(s.port, { path: `${OBJECTS}/secret` })).status, 200);
    assert.equal(vendor.tokens.length, 2);
  });
});

describe('a wrong token.attach, whatever the vendor answers a missing token with', () => {
  // Each vendor wants the token somewhere the default attachment (Authorization: Bearer) does not put it.
  for (const name of ['spring', 'login', 'forbidden', 'notFound'] as const) {
    it(`${name}: the gauge, a /readyz warning and one error line naming token.attach and the doctor command by the 10th request on two paths; cleared at the first success`, async (t) => {
      let fixed = false;
      const rule: Rule = (p, req) => (fixed && p.issued(p.header('Authorization')?.replace(/^Bearer /, '')) ? undefined : VENDORS[name](p, req));
      const vendor = await startVendor(rule);
      t.after(() => vendor.close());
      const clock = new FakeClock();
      const s = await sidecar(t, vendor, clock);
      const paths = [`${OBJECTS}/obj-42`, `${OBJECTS}/obj-43?x=1`];
      for (let i = 0; i < 9; i++) {
        const r = await send(s.port, { path: paths[i % 2] });
        assert.notEqual(r.status, 200);
      }
      assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 0, 'not before the threshold');
      await send(s.port, { path: paths[1] });
      assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 1);
      const ready = await readyz(s);
      assert.equal(ready.status, 200, 'a warning, not a readiness failure');
      assert.match(ready.warnings.join(), /no request has succeeded since the token was obtained.*token\.attach.*--probe \/pub\/b2b\/v1\/objects\/obj-43 --discover-attach/);
      for (let i = 0; i < 5; i++) await send(s.port, { path: paths[i % 2] });
      const errors = attachErrors(s);
      assert.equal(errors.length, 1, 'logged once');
      assert.match(String(errors[0]!.message), /token\.attach .*b2b-sidecar doctor --config <config file> --probe \/pub\/b2b\/v1\/objects\/obj-43 --discover-attach/);
      assert.equal(vendor.tokens.length, 1, 'refusals other than 401 cost no gentoken call');

      fixed = true;
      assert.equal((await send(s.port, { path: paths[0] })).status, 200);
      assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 0);
      assert.deepEqual((await readyz(s)).warnings, []);
      assert.ok(s.log.lines().some((l) => l.message === 'the service accepts the token again; token.attach is no longer suspect'));
    });
  }

  it('a correct token.attach whose app asks for objects that do not exist (404s beside successes) is never suspect', async (t) => {
    const rule: Rule = (p, req) => {
      if (!p.issued(p.header('X-Token'))) return { status: 404, body: { message: 'Not Found' } };
      return req.url?.includes('missing') ? { status: 404, body: { message: 'Not Found' } } : undefined;
    };
    const vendor = await startVendor(rule);
    t.after(() => vendor.close());
    const clock = new FakeClock();
    const s = await sidecar(t, vendor, clock, { token: { attach: [{ in: 'header', name: 'X-Token', value: '{token}' }] } });
    const statuses: number[] = [];
    for (let i = 0; i < 60; i++) {
      // Five of every six requests ask for an object that does not exist, each a different one.
      const path = i % 6 === 0 ? `${OBJECTS}/obj-42` : `${OBJECTS}/missing-${i}`;
      statuses.push((await send(s.port, { path })).status);
      if (i % 20 === 19) clock.advance(600_000); // renewals: each new token starts its own record
    }
    assert.equal(statuses.filter((x) => x === 404).length, 50);
    assert.equal(await sample(s, 'b2b_sidecar_attach_suspect'), 0);
    assert.deepEqual((await readyz(s)).warnings, []);
    assert.deepEqual(attachErrors(s), []);
  });
});
