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


const credentials = (token: string, generation: number): RouteCredentials => ({
  prepared: { headers: [['authorization', `Bearer ${token}`]], query: '', cookie: '' },
  generation,
});

/** An upstream that rejects every token with a 401 and records what it was sent. */
function rejectingEngine(): ProxyEngine & { sent: UpstreamRequest[] } {
  const sent: UpstreamRequest[] = [];
  return {
    sent,
    async send(request) {
      sent.push(request);
      const body = Buffer.from('{"message":"token rejected"}');
      return { status: 401, headers: { 'content-type': 'application/json', 'content-length': String(body.length) }, body: bufferedBody(body) };
    },
    async close() {},
  };
}

/** A real listener running the proxy handler on one route with the given engine and credentials. */
async function startHandler(engine: ProxyEngine, source: CredentialSource) {
  const handler = createProxyHandler({
    routes: [{ name: 'service', prefix: '', engine, credentials: source, stripHeaders: new Set(['authorization']), stripQuery: new Set(), stripCookies: new Set() }],
    guard: compileIpGuard(['127.0.0.1/32']), metrics: NO_METRICS, logger: createCaptureLogger().logger, clock: systemClock,
    replayBodyLimitBytes: 64 * 1024, replayBudget: new ReplayBudget(1 << 20), logRequests: false,
  });
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('401 replay', () => {
  it('passes the 401 back without a replay when the renewal returns the credentials just rejected', async () => {
    const used = credentials('rejected-token', 7);
    let renewals = 0;
    const source: CredentialSource = {
      current: () => used,
      acquire: async () => used,
      // A throttled or failed renewal that settles with the token the service just rejected
      // (a copy: the guard must not depend on object identity).
      renewAfterUnauthorized: async () => { renewals++; return { ...used }; },
    };
    const engine = rejectingEngine();
    const server = await startHandler(engine, source);
    try {
      const res = await send(server.port, { method: 'POST', path: '/x', body: 'payload', headers: { 'content-length': 7 } });
      assert.equal(res.status, 401);
      assert.deepEqual(res.json(), { message: 'token rejected' });
      assert.equal(renewals, 1);
      assert.equal(engine.sent.length, 1, 'the rejected token must not be sent again');
    } finally {
      await server.close();
    }
  });

  it('replays once with renewed credentials', async () => {
    const source: CredentialSource = {
      current: () => credentials('old-token', 1),
      acquire: async () => credentials('old-token', 1),
      renewAfterUnauthorized: async () => credentials('new-token', 2),
    };
    const engine = rejectingEngine();
    const server = await startHandler(engine, source);
    try {
      const res = await send(server.port, { path: '/x' });
      assert.equal(res.status, 401);
      assert.deepEqual(engine.sent.map((r) => r.headers.authorization), ['Bearer old-token', 'Bearer new-token']);
    } finally {
      await server.close();
    }
  });
});
