import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';

// The one test that runs on real time: renewal under real traffic, end to end.
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

  it('attaches the token current when the body has arrived, not the one when the upload began', async () => {
    const sim = await startSimulator({ ttlSeconds: 2 });
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    try {
      await waitReady(s);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/pub/b2b/v1/echo', agent: false, headers: { 'content-length': 10 } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.write('12345');
        // The token the sidecar held when the upload began expires meanwhile.
        setTimeout(() => req.end('67890'), 2500);
      });
      assert.equal(status, 200);
      assert.equal(sim.stats.expiredTokenPresented, 0);
      assert.equal(sim.stats.unauthorizedApiRequests, 0);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });
});
