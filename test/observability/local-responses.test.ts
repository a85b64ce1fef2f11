import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SCRAPE_CACHE_MS } from '../../src/observability/admin.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';

/** The sidecar's clock: /metrics serves one rendering for SCRAPE_CACHE_MS, so each sample moves past it. */
const clock = new FakeClock();

/** One sample of the sidecar's own /metrics, as Prometheus scrapes it (a fresh rendering each time). */
async function sample(adminPort: number, name: string, labels: string): Promise<number> {
  clock.advance(SCRAPE_CACHE_MS);
  const text = (await send(adminPort, { path: '/metrics' })).body.toString();
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((kv) => l.includes(kv)));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

/**
 * b2b_sidecar_local_responses_total tells the sidecar's own answers (what B2BSidecarLocalErrors
 * alerts on) from the service's answers passed through, which b2b_sidecar_requests_total counts alike.
 */
describe('local responses metric', () => {
  it('counts a 502 the sidecar answers when the service is unreachable, not a 502 passed through from the service', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl, clock });
    try {
      await waitReady(s);
      const passed = await send(s.port, { path: '/pub/b2b/v1/status/502' });
      assert.equal(passed.status, 502);
      assert.equal(await sample(s.adminPort, 'b2b_sidecar_requests_total', 'code="502"'), 1);
      assert.equal(await sample(s.adminPort, 'b2b_sidecar_local_responses_total', 'route="service",code="502"'), 0);

      await sim.stop(); // the token stays valid; the service is gone
      const local = await send(s.port, { path: '/pub/b2b/v1/objects/obj-42' });
      assert.equal(local.status, 502);
      assert.match(local.json<{ message: string }>().message, /service/);
      assert.equal(await sample(s.adminPort, 'b2b_sidecar_local_responses_total', 'route="service",code="502"'), 1);
      assert.equal(await sample(s.adminPort, 'b2b_sidecar_requests_total', 'code="502"'), 2);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });

  it('counts the TRACE 501 as a local answer', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl, clock });
    try {
      assert.equal((await send(s.port, { method: 'TRACE', path: '/pub/b2b/v1/echo' })).status, 501);
      assert.equal(await sample(s.adminPort, 'b2b_sidecar_local_responses_total', 'code="501"'), 1);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });
});
