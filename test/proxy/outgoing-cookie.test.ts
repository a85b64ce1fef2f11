import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { systemClock } from '../../src/shared/clock.js';
import type { CredentialSource, RouteCredentials } from '../../src/proxy/route-credentials.js';
import { compileIpGuard } from '../../src/shared/ip-guard.js';
import { createProxyHandler } from '../../src/proxy/proxy-handler.js';
import { ReplayBudget } from '../../src/proxy/body/replay-body.js';
import type { ProxyEngine, UpstreamRequest } from '../../src/upstream/engine.js';
import { bufferedBody } from '../../src/upstream/upstream-body.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { NO_METRICS } from '../helpers/no-metrics.js';
import { send } from '../helpers/stack.js';

const CREDENTIALS: RouteCredentials = { prepared: { headers: [], query: '', cookie: 'sid=sidecar-token' }, generation: 1 };

/** The proxy handler on one route whose token goes in the `sid` cookie; records what it sends. */
async function start() {
  const sent: UpstreamRequest[] = [];
  const engine: ProxyEngine = {
    async send(request) {
      sent.push(request);
      return { status: 204, headers: {}, body: bufferedBody(Buffer.alloc(0)) };
    },
    async close() {},
  };
  const source: CredentialSource = { current: () => CREDENTIALS, acquire: async () => CREDENTIALS };
  const handler = createProxyHandler({
    routes: [{ name: 'service', prefix: '', engine, credentials: source, stripHeaders: new Set(), stripQuery: new Set(), stripCookies: new Set(['sid']) }],
    guard: compileIpGuard(['127.0.0.1/32']), metrics: NO_METRICS, logger: createCaptureLogger().logger, clock: systemClock,
    replayBodyLimitBytes: 1024, replayBudget: new ReplayBudget(1 << 20), logRequests: false,
  });
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { sent, port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('cookie attachment', () => {
  it('replaces a client cookie of the same name and keeps the others', async () => {
    const s = await start();
    try {
      await send(s.port, { path: '/x', headers: { cookie: 'a=1; sid=forged' } });
      assert.equal(s.sent[0]!.headers.cookie, 'a=1; sid=sidecar-token');
    } finally {
      await s.close();
    }
  });

  it('drops the client cookies a Connection header nominates, and still attaches its own', async () => {
    const s = await start();
    try {
      await send(s.port, { path: '/x', headers: { cookie: 'a=1; sid=forged', connection: 'keep-alive, cookie' } });
      assert.equal(s.sent[0]!.headers.cookie, 'sid=sidecar-token');
    } finally {
      await s.close();
    }
  });
});
