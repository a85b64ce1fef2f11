import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, describe, it } from 'node:test';
import request from 'supertest';
import { createAdminHandler } from '../../src/observability/admin.js';
import { createRegistry } from '../../src/observability/metrics.js';
import { liveness, readiness, stateOf, statusLine, statusText, type SidecarStatus, type TokenStatus } from '../../src/observability/status.js';
import { compileIpGuard } from '../../src/shared/ip-guard.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

const TOKEN: TokenStatus = {
  ready: true, live: true, fingerprint: 'ab12cd34', generation: 2, obtainedAt: '2026-01-01T00:00:00.000Z', expiresAt: '2026-01-01T00:15:00.000Z',
  ageSeconds: 60, expiresInSeconds: 840, nextAttemptAt: '2026-01-01T00:10:00.000Z', warnings: [],
};

function status(over: Partial<SidecarStatus> = {}, token: Partial<TokenStatus> = {}): SidecarStatus {
  const t = { ...TOKEN, ...token };
  const s = { ready: true, live: true, warnings: [], token: t, credentials: [{ id: 'default', token: t }], listeners: { proxy: '127.0.0.1:8080', admin: '127.0.0.1:9464' }, build: { version: '1.2.3', node: 'v24.21.0' }, at: '2026-01-01T00:01:00.000Z', ...over };
  return { state: stateOf(s, t), ...s };
}

describe('the one status and its renderings', () => {
  it('names the state, not ready first, then refresh failing, attach suspect, superseded', () => {
    assert.equal(status().state, 'ready');
    assert.equal(status({ ready: false, reason: 'starting' }).state, 'starting');
    assert.equal(status({ ready: false, reason: 'shutting down' }).state, 'shutting down');
    assert.equal(status({ ready: false, reason: 'credentials rejected by the auth server' }).state, 'no token');
    const failing = { lastRefreshError: { cause: 'timeout', message: 'auth server timed out', at: 'x', since: 'x', attempts: 1 } };
    const suspect = { attachSuspect: { evidence: 'answers' as const, path: '/a' } };
    const superseded = { superseded: { lastAt: 'x', inWindow: 3, windowMinutes: 10, total: 3, likelyAnotherHolder: true } };
    assert.equal(status({}, { ...failing, ...suspect, ...superseded }).state, 'refresh failing');
    assert.equal(status({}, { ...suspect, ...superseded }).state, 'attach suspect');
    assert.equal(status({}, superseded).state, 'superseded');
    assert.equal(status({}, { superseded: { ...superseded.superseded, likelyAnotherHolder: false } }).state, 'ready', 'one rejection is not yet another holder');
  });

  it('renders /readyz, /healthz and STATUS= as they were (no warnings key without warnings)', () => {
    assert.deepEqual(readiness(status()), { ready: true });
    assert.deepEqual(readiness(status({ ready: false, reason: 'no token yet' })), { ready: false, reason: 'no token yet' });
    assert.deepEqual(readiness(status({ warnings: ['w'] })), { ready: true, warnings: ['w'] });
    assert.deepEqual(liveness(status({ live: false, liveReason: 'stuck' })), { live: false, reason: 'stuck' });
    assert.equal(statusLine(readiness(status({ warnings: ['a', 'b'] }))), 'ready (warning: a; b)');
    assert.equal(statusLine(readiness(status({ ready: false, reason: 'no token yet' }))), 'not ready: no token yet');
  });

  it('prints one block per credential set when there are several, and each set\'s listener', () => {
    const t = { ...TOKEN };
    const refused = { ...TOKEN, ready: false, reason: 'credentials rejected by the auth server', fingerprint: undefined };
    const text = statusText(status({
      ready: false, reason: 'credential set b: credentials rejected by the auth server',
      credentials: [{ id: 'a', token: t }, { id: 'b', token: refused }],
      listeners: { proxy: '127.0.0.1:8080', admin: '127.0.0.1:9464', sets: { a: '127.0.0.1:8081' } },
    }));
    assert.equal(text, [
      'no token: credential set b: credentials rejected by the auth server',
      'credential set a: ready',
      '  token:       ab12cd34 (generation 2), age 60 s, expires in 840 s (2026-01-01T00:15:00.000Z)',
      '  next attempt: 2026-01-01T00:10:00.000Z',
      'credential set b: no token: credentials rejected by the auth server',
      '  token:       none',
      '  next attempt: 2026-01-01T00:10:00.000Z',
      'listeners:     proxy 127.0.0.1:8080, admin 127.0.0.1:9464, a 127.0.0.1:8081',
      'build:         b2b-sidecar 1.2.3, node v24.21.0',
      '',
    ].join('\n'));
  });

  it('prints the text: the verdict first, one fact a line', () => {
    assert.equal(statusText(status()), [
      'ready',
      'token:         ab12cd34 (generation 2), age 60 s, expires in 840 s (2026-01-01T00:15:00.000Z)',
      'next attempt:  2026-01-01T00:10:00.000Z',
      'listeners:     proxy 127.0.0.1:8080, admin 127.0.0.1:9464',
      'build:         b2b-sidecar 1.2.3, node v24.21.0',
      '',
    ].join('\n'));
  });

  it('prints the fleet line: the store, its state, where the token came from, the record (no token)', () => {
    const fleet = {
      store: 'sqlite' as const, credential: 'default', state: 'up' as const, since: '2026-01-01T00:00:00.000Z', source: 'shared' as const,
      onStoreDown: 'local' as const, version: 7, mintedBy: 'host-b/42', mintedAt: '2026-01-01T00:00:00.000Z', ageSeconds: 60, lifetimeSeconds: 900,
    };
    assert.ok(statusText(status({}, { fleet })).includes('fleet:         sqlite up since 2026-01-01T00:00:00.000Z, token shared, record version 7 minted by host-b/42 60 s ago, onStoreDown local\n'));
    const down = { ...fleet, state: 'down' as const, source: 'local' as const, lastError: { operation: 'read', message: 'cannot open the SQLite store /x: no such directory', at: 'x' } };
    assert.ok(statusText(status({}, { fleet: down })).includes('fleet:         sqlite down since 2026-01-01T00:00:00.000Z (read: cannot open the SQLite store /x: no such directory), token local,'));
  });

  it('GET /status answers the status as JSON, under the same admin.allow as every admin path', async () => {
    const value = status({ warnings: ['w'] });
    for (const allowed of [true, false]) {
      const guard = compileIpGuard(allowed ? ['127.0.0.1/32'] : ['10.0.0.0/8']);
      const capture = createCaptureLogger();
      const handler = createAdminHandler({ registry: createRegistry(), health: () => ({ ready: true }), status: () => value, allow: (p) => guard.allows(guard.clientAddress(p, undefined)), logger: capture.logger });
      const server = createServer(handler).listen(0, '127.0.0.1');
      servers.push(server);
      await new Promise((resolve) => server.once('listening', resolve));
      const http = request(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
      if (allowed) {
        const res = await http.get('/status').expect(200).expect('Content-Type', /application\/json/);
        assert.deepEqual(res.body, value);
        await http.head('/status').expect(200);
        assert.deepEqual((await http.post('/status').expect(405)).body, { message: 'method POST not allowed' });
      } else {
        assert.deepEqual((await http.get('/status').expect(403)).body, { message: 'forbidden' });
      }
    }
  });
});
