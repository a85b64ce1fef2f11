import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SecretSet } from '../../src/shared/secrets.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { generateTlsMaterial } from '../../src/simulator/certs.js';
import { createTokenClient, type Credentials } from '../../src/token/token-client.js';
import { TokenManager, type GentokenCause } from '../../src/token/token-manager.js';
import { FakeClock, flush } from '../helpers/fake-clock.js';
import { captureLogger, ok, startGentokenServer, type Reply } from '../helpers/gentoken-server.js';
import { testTls } from '../helpers/tls.js';

const creds: Credentials = { apiKey: 'apikey-classes-0001', password: 'pw-Classes-Secret-7', version: 1 };

/**
 * A manager with the production client against a real HTTPS gentoken server answering `reply`,
 * on a fake clock (random 1: every backoff draw is its ceiling, so the schedule is exact).
 * `trustOtherCa` makes the client trust a CA that did not sign the server's certificate.
 */
async function setup(reply: () => Reply, trustOtherCa = false) {
  const server = await startGentokenServer(() => reply());
  const ca = trustOtherCa ? { file: 'other-ca.pem', extraPem: (await generateTlsMaterial(['localhost'])).caPem } : loadTrustedCas((await testTls()).caFile);
  const client = createTokenClient({ baseUrl: server.url, ca, timeoutMs: 5000 });
  const clock = new FakeClock();
  const calls: number[] = [];
  const pending = new Set<Promise<unknown>>();
  const causes: GentokenCause[] = [];
  const log = captureLogger();
  const manager = new TokenManager({
    client: {
      requestToken(c) {
        calls.push(clock.now());
        const p = client.requestToken(c);
        pending.add(p);
        const done = () => pending.delete(p);
        p.then(done, done);
        return p;
      },
    },
    credentials: { current: () => creds }, clock, logger: log.logger, secrets: new SecretSet(), random: () => 0.999999,
    onFailure: (c) => causes.push(c),
    options: { renewAt: 0.66, maxLifetimeSeconds: 900, tokenTimeoutMs: 10_000, maxGentokenPerMinute: 12, maxRetryAfterSeconds: 600 },
  });
  const settle = async () => {
    await flush();
    while (pending.size) {
      await Promise.allSettled([...pending]);
      await flush();
    }
  };
  return {
    manager, calls, causes, log, server,
    advance: (ms: number) => clock.advanceAsync(ms, settle),
    async close() {
      await manager.stop();
      await client.close();
      await server.close();
      for (const s of [creds.password, creds.apiKey]) assert.ok(!log.text().includes(s), 'no credential in the log');
    },
  };
}

/** Gaps between successive calls, in ms. */
const gaps = (calls: number[]) => calls.slice(1).map((at, i) => at - calls[i]!);

describe('gentoken failure classes: /readyz message and backoff', () => {
  it('403: refused, says the egress address is likely not allowed, retried on the slow schedule', async () => {
    const t = await setup(() => ({ status: 403, body: { message: 'Forbidden' } }));
    try {
      t.manager.start();
      await t.advance(0);
      assert.deepEqual(t.causes, ['refused']);
      const { ready, reason } = t.manager.status();
      assert.equal(ready, false);
      assert.match(reason!, /^gentoken refused \(HTTP 403\): this host's egress address is most likely not on the vendor's allow list; give the vendor's support team the egress address$/);
      await t.advance(20_000);
      // Slow schedule with the ceiling drawn: ~5 s, ~10 s, ... never the transient 1 s, 2 s.
      assert.ok(gaps(t.calls).length >= 1);
      gaps(t.calls).forEach((g, n) => assert.ok(g >= Math.floor(0.999999 * 5_000 * 2 ** n) - 1, `gap ${n}: ${g} ms`));
      assert.equal(t.manager.liveness().live, true, 'a refusal is readiness, never liveness');
      assert.match(t.log.text(), /refused by the auth server \(HTTP 403\)/);
    } finally {
      await t.close();
    }
  });

  it('TLS distrust: names the code and service.caFile, not "unreachable"; transient schedule; no request reaches the server', async () => {
    const t = await setup(() => ok('never', 900), true);
    try {
      t.manager.start();
      await t.advance(0);
      assert.deepEqual(t.causes, ['tls']);
      const reason = t.manager.status().reason!;
      assert.match(reason, /^auth server certificate not trusted: TLS: [A-Z_]+: .*; check service\.caFile$/);
      assert.doesNotMatch(reason, /unreachable/);
      await t.advance(1_000);
      assert.equal(t.calls.length, 2, 'retried after the first transient ceiling (1 s)');
      assert.equal(t.server.requests.length, 0);
    } finally {
      await t.close();
    }
  });

  it('429 with Retry-After: says how long, and no call before it', async () => {
    let n = 0;
    const t = await setup(() => (n++ === 0 ? { status: 429, headers: { 'Retry-After': '45' } } : ok('tkn-after-429-abcdef', 900)));
    try {
      t.manager.start();
      await t.advance(0);
      assert.deepEqual(t.causes, ['rate_limited']);
      assert.equal(t.manager.status().reason, 'auth server asked to slow down (Retry-After); no gentoken call for 45 s');
      await t.advance(44_999);
      assert.equal(t.calls.length, 1);
      await t.advance(1);
      assert.equal(t.calls.length, 2);
      assert.deepEqual(t.manager.status(), { ready: true });
    } finally {
      await t.close();
    }
  });

  it('429 without Retry-After: the slow schedule', async () => {
    const t = await setup(() => ({ status: 429 }));
    try {
      t.manager.start();
      await t.advance(0);
      assert.equal(t.manager.status().reason, 'auth server asked to slow down (HTTP 429)');
      await t.advance(4_999);
      assert.equal(t.calls.length, 1, 'not on the transient 1 s schedule');
      await t.advance(1_001); // 5 s, at most 20 % later
      assert.equal(t.calls.length, 2);
    } finally {
      await t.close();
    }
  });
});
