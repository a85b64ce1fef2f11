import assert from 'node:assert/strict';
import { get } from 'node:http';
import { describe, it } from 'node:test';
import { startGentokenServer } from '../helpers/gentoken-server.js';
import { CREDENTIALS, startSidecar } from '../helpers/stack.js';

function admin(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

describe('sidecar: a refusing vendor is readiness, not liveness', () => {
  it('gentoken 403: /healthz 200, /readyz 503 with the egress hint, failures counted by cause', async () => {
    const server = await startGentokenServer(() => ({ status: 403, body: { message: 'Forbidden' } }));
    const s = await startSidecar({ baseUrl: server.url });
    try {
      await server.received(1);
      // The answer reaches the manager a moment after the server saw the request.
      for (let i = 0; i < 500 && s.sidecar.tokens?.status().reason === 'no token yet'; i++) await new Promise((r) => setImmediate(r));
      const health = await admin(s.adminPort, '/healthz');
      assert.equal(health.status, 200);
      assert.deepEqual(JSON.parse(health.body), { status: 'ok' });
      const ready = await admin(s.adminPort, '/readyz');
      assert.equal(ready.status, 503);
      assert.match(JSON.parse(ready.body).message, /^gentoken refused \(HTTP 403\): this host's egress address/);
      const metrics = (await admin(s.adminPort, '/metrics')).body;
      assert.match(metrics, /^b2b_sidecar_token_request_failures_total\{cause="refused",credential="default"\} 1$/m);
      assert.match(metrics, /^b2b_sidecar_token_request_failures_total\{cause="tls",credential="default"\} 0$/m);
      assert.match(metrics, /^b2b_sidecar_gentoken_deferred_total\{trigger="rotation",credential="default"\} 0$/m);
      const next = Number(/^b2b_sidecar_token_next_refresh_timestamp_seconds\{credential="default"\} (\S+)$/m.exec(metrics)?.[1]);
      assert.ok(next > Date.now() / 1000 - 5, 'a retry is scheduled');
      assert.match(metrics, /^b2b_sidecar_token_expiry_timestamp_seconds\{credential="default"\} 0$/m);
      for (const secret of [CREDENTIALS.password, CREDENTIALS.apiKey]) assert.ok(!s.log.text().includes(secret));
    } finally {
      await s.stop();
      await server.close();
    }
  });
});
