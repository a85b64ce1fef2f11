import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { send, startSidecar, startSimulator, waitReady } from './helpers/stack.js';

// The one test that runs on real time: renewal under real traffic, end to end, as issue 2 asks.
describe('continuous traffic across token renewals', () => {
  it('serves 10 s of traffic with a 2 s token lifetime: zero failures, no expired token presented', async () => {
    const sim = await startSimulator({ ttlSeconds: 2 });
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    try {
      await waitReady(s);
      const tokensBefore = sim.stats.tokensIssued;
      const deadline = Date.now() + 10_000;
      const failures: number[] = [];
      let requests = 0;
      const worker = async () => {
        while (Date.now() < deadline) {
          const res = await send(s.port, { path: '/pub/b2b/v1/echo' });
          requests++;
          if (res.status !== 200) failures.push(res.status);
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      assert.deepEqual(failures, []);
      assert.ok(requests > 100, `only ${requests} requests`);
      assert.equal(sim.stats.expiredTokenPresented, 0);
      assert.equal(sim.stats.unauthorizedApiRequests, 0);
      // 2 s tokens renewed at ~66 %: about 7 renewals in 10 s, and never a storm.
      const renewals = sim.stats.tokensIssued - tokensBefore;
      assert.ok(renewals >= 5 && renewals <= 12, `${renewals} renewals`);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });
});
