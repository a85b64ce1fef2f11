import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CREDENTIALS, send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';

describe('per-request access log (log.requests)', () => {
  it('logs method, route, status, duration and source, never the query string or a secret', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { log: { requests: true } } });
    try {
      await waitReady(s);
      await send(s.port, { path: '/pub/b2b/v1/echo?secret=query-value-123' });
      await new Promise((r) => setTimeout(r, 20));
      const line = s.log.lines().find((l) => l.message === 'request');
      assert.ok(line, 'an access log line');
      assert.equal(line.method, 'GET');
      assert.equal(line.route, 'service');
      assert.equal(line.status, 200);
      assert.equal(typeof line.durationMs, 'number');
      assert.equal(line.source, '127.0.0.1');
      const text = s.log.text();
      assert.equal(text.includes('query-value-123'), false);
      for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, s.sidecar.tokens!.current()!.value]) assert.equal(text.includes(secret), false);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });

  it('is off by default', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    try {
      await waitReady(s);
      await send(s.port, { path: '/pub/b2b/v1/echo' });
      assert.equal(s.log.lines().some((l) => l.message === 'request'), false);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });
});
