import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { systemClock } from '../../src/shared/clock.js';
import type { CredentialSource, RouteCredentials } from '../../src/proxy/route-credentials.js';
import { compileIpGuard } from '../../src/shared/ip-guard.js';
import { createProxyHandler } from '../../src/proxy/proxy-handler.js';
import { ReplayBudget } from '../../src/proxy/body/replay-body.js';
import type { ProxyEngine } from '../../src/upstream/engine.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { NO_METRICS } from '../helpers/no-metrics.js';
import { send } from '../helpers/stack.js';

const CREDENTIALS: RouteCredentials = { prepared: { headers: [['authorization', 'Bearer t']], query: '', cookie: '' }, generation: 1 };

describe('an engine that throws instead of rejecting', () => {
  it('still gets the client a JSON 502, reads the rest of the upload and keeps the connection usable', async () => {
    let calls = 0;
    const engine: ProxyEngine = {
      send() {
        calls++;
        throw Object.assign(new Error('sync boom'), { code: 'ECONNREFUSED' });
      },
      async close() {},
    };
    const source: CredentialSource = { current: () => CREDENTIALS, acquire: async () => CREDENTIALS };
    const replayBudget = new ReplayBudget(1 << 20);
    const handler = createProxyHandler({
      routes: [{ name: 'service', prefix: '', engine, credentials: source, stripHeaders: new Set(), stripQuery: new Set(), stripCookies: new Set() }],
      guard: compileIpGuard(['127.0.0.1/32']), metrics: NO_METRICS, logger: createCaptureLogger().logger, clock: systemClock,
      replayBodyLimitBytes: 1024, replayBudget, logRequests: false,
    });
    const uncaught: unknown[] = [];
    const server = createServer((req, res) => {
      try {
        handler(req, res);
      } catch (err) {
        uncaught.push(err);
        throw err;
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const first = await send(port, { method: 'POST', path: '/x', body: Buffer.alloc(512, 1) });
      assert.equal(first.status, 502);
      assert.match(first.body.toString(), /"message"/);
      assert.deepEqual(uncaught, [], 'the handler threw');
      assert.equal(replayBudget.held, 0, 'the body copy was not released');
      const second = await send(port, { path: '/y' });
      assert.equal(second.status, 502);
      assert.equal(calls, 2);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
