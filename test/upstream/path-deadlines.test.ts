import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfig } from '../../src/config/validate-config.js';
import { ConfigError } from '../../src/shared/errors.js';
import { ENGINES, send, startSidecar, waitReady } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * service.pathTimeouts: a path deadline reaches every timer of both engines (upstream/engine.ts),
 * the longest matching prefix wins, every other path keeps the route's deadline. The service
 * answers slowly on every path; the deadlines are 200 ms for the route and 5 s for the export
 * prefix, so only the ordering matters, not the machine's speed. The answer comes after 2 s, not
 * a few hundred ms: undici runs its own header and body timers on its coarse timer wheel (about
 * 1 s late), and the test must outlast them to show the path deadline reached them too.
 */
const SLOW_MS = 2000;
const EXPORT = '/pub/b2b/v1/export/';

/** The service: headers after SLOW_MS, or (`/pub/b2b/v1/export/paused`) headers at once and the body after SLOW_MS. */
function slowService() {
  return startUpstream((req, res) => {
    if (req.url?.endsWith('/paused')) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first ');
      setTimeout(() => res.end('last'), SLOW_MS);
      return;
    }
    setTimeout(() => res.end(`answer for ${req.url}`), SLOW_MS);
  });
}

const overrides = {
  service: {
    timeoutMs: 200,
    // The longer prefix is listed second: it wins by length, not by place.
    pathTimeouts: [{ pathPrefix: '/pub/', timeoutMs: 150 }, { pathPrefix: EXPORT, timeoutMs: 5000 }],
  },
  proxy: { idleTimeoutMs: 200 },
};

for (const engine of ENGINES) {
  describe(`service.pathTimeouts (${engine})`, () => {
    it('a path under the long prefix gets its slow answer; another path gets 504 at the route\'s deadline', async () => {
      const up = await slowService();
      const s = await startSidecar({ baseUrl: up.url, engine, overrides });
      try {
        await waitReady(s);
        const [exported, other, shorter] = await Promise.all([
          send(s.port, { path: `${EXPORT}report.csv` }),
          send(s.port, { path: '/pub2/other' }),
          send(s.port, { path: '/pub/b2b/v1/orders' }),
        ]);
        assert.equal(exported.status, 200);
        assert.equal(exported.body.toString(), `answer for ${EXPORT}report.csv`);
        assert.equal(other.status, 504, 'the route\'s deadline (service.timeoutMs) still applies elsewhere');
        assert.equal(shorter.status, 504, 'outside the export prefix, /pub/ (150 ms) applies');
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('a body pausing longer than proxy.idleTimeoutMs under the long prefix arrives whole', async () => {
      const up = await slowService();
      const s = await startSidecar({ baseUrl: up.url, engine, overrides });
      try {
        await waitReady(s);
        const res = await send(s.port, { path: `${EXPORT}paused` });
        assert.equal(res.status, 200);
        assert.equal(res.body.toString(), 'first last');
      } finally {
        await s.stop();
        await up.close();
      }
    });
  });
}

describe('service.pathTimeouts in the config', () => {
  const base = { service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'k-123456', password: 'p-123456' } };
  const problems = (pathTimeouts: unknown): string[] => {
    try {
      validateConfig({ ...base, service: { ...base.service, pathTimeouts } });
    } catch (err) {
      if (err instanceof ConfigError) return err.problems;
      throw err;
    }
    return [];
  };

  it('bounds each timeoutMs like every millisecond key, naming the key path', () => {
    assert.deepEqual(problems([{ pathPrefix: EXPORT, timeoutMs: 2 ** 31 }]), ['service.pathTimeouts[0].timeoutMs: must be <= 2147483647']);
    assert.deepEqual(problems([{ pathPrefix: '/a/', timeoutMs: 1000 }, { pathPrefix: EXPORT, timeoutMs: 50 }]), ['service.pathTimeouts[1].timeoutMs: must be >= 100']);
  });

  it('refuses a prefix that is not a path and an entry without a deadline', () => {
    assert.deepEqual(problems([{ pathPrefix: 'export/', timeoutMs: 1000 }]), ['service.pathTimeouts[0].pathPrefix: must match pattern "^/"']);
    assert.deepEqual(problems([{ pathPrefix: EXPORT }]), ['service.pathTimeouts[0].timeoutMs: is required']);
  });

  it('defaults to none', () => {
    assert.deepEqual(validateConfig(base).service.pathTimeouts, []);
  });
});
