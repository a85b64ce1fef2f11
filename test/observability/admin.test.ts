import assert from 'node:assert/strict';
import { connect, type AddressInfo } from 'node:net';
import { createServer, type Server } from 'node:http';
import { after, describe, it } from 'node:test';
import { Gauge } from '@prometheus-io/client';
import request from 'supertest';
import { createAdminHandler, SCRAPE_CACHE_MS, type AdminOptions } from '../../src/observability/admin.js';
import { compileIpGuard } from '../../src/shared/ip-guard.js';
import { createMetrics, createRegistry } from '../../src/observability/metrics.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';

const servers: Server[] = [];
after(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
});

function guard(allow: string[]): AdminOptions['allow'] {
  const ip = compileIpGuard(allow);
  return (peer) => ip.allows(ip.clientAddress(peer, undefined));
}

async function start(overrides: Partial<AdminOptions> = {}) {
  const capture = createCaptureLogger();
  const registry = createRegistry();
  createMetrics(registry, { status: () => ({ token: { ready: true, live: true, ageSeconds: 3, expiresInSeconds: 897, warnings: [] } }), replayHeldBytes: () => 0 }).credentialStarted('default');
  const handler = createAdminHandler({
    registry,
    health: () => ({ ready: true }),
    allow: guard(['127.0.0.1/32', '::1/128']),
    logger: capture.logger,
    ...overrides,
  });
  const server = createServer(handler).listen(0, '127.0.0.1');
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  return { http: request(`http://127.0.0.1:${port}`), registry, capture };
}

describe('admin handler', () => {
  it('answers /healthz with 200 JSON, for GET and HEAD, without x-powered-by', async () => {
    const { http } = await start();
    const res = await http.get('/healthz').expect(200).expect('Content-Type', /application\/json/);
    assert.deepEqual(res.body, { status: 'ok' });
    assert.equal(res.headers['x-powered-by'], undefined);
    assert.equal(res.headers['cache-control'], 'no-store');
    await http.head('/healthz').expect(200);
  });

  it('answers /healthz 503 with the reason when the token loop is not live, 200 again when it is', async () => {
    let state: { live: boolean; reason?: string } = { live: false, reason: 'no gentoken attempt is in flight or scheduled: the token loop has stopped' };
    const { http } = await start({ live: () => state, health: () => ({ ready: false, reason: 'credentials rejected by the auth server' }) });
    const res = await http.get('/healthz').expect(503);
    assert.deepEqual(res.body, { status: 'not live', message: 'no gentoken attempt is in flight or scheduled: the token loop has stopped' });
    state = { live: true };
    assert.deepEqual((await http.get('/healthz').expect(200)).body, { status: 'ok' }, 'not ready is not unhealthy');
  });

  it('answers /readyz 200 when ready and 503 with the reason when not', async () => {
    let state: { ready: boolean; reason?: string } = { ready: true };
    const { http } = await start({ health: () => state });
    assert.deepEqual((await http.get('/readyz').expect(200)).body, { status: 'ready' });
    state = { ready: false, reason: 'credentials rejected by the auth server' };
    const res = await http.get('/readyz').expect(503);
    assert.deepEqual(res.body, { status: 'not ready', message: 'credentials rejected by the auth server' });
    await http.head('/readyz').expect(503);
  });

  it('answers /readyz?credential=<id> for one credential set: 200, 503 with its reason, 404 unknown, 400 malformed', async () => {
    const sets: Record<string, { ready: boolean; reason?: string }> = { a: { ready: true }, b: { ready: false, reason: 'credentials rejected by the auth server' } };
    const { http } = await start({ health: () => ({ ready: false, reason: 'credential set b: credentials rejected by the auth server' }), healthOf: (id) => sets[id] });
    assert.deepEqual((await http.get('/readyz?credential=a').expect(200)).body, { status: 'ready' });
    assert.deepEqual((await http.get('/readyz?credential=b').expect(503)).body, { status: 'not ready', message: 'credentials rejected by the auth server' });
    assert.match((await http.get('/readyz?credential=c').expect(404)).body.message, /no credential set has the id "c"/);
    assert.match((await http.get('/readyz?credential=%3Cscript%3E').expect(400)).body.message, /must be a credential set id/);
    assert.match((await http.get('/readyz?credential=a&credential=b').expect(400)).body.message, /one credential parameter/);
    await http.get('/readyz').expect(503);
  });

  it('serves the registry at /metrics with its content type', async () => {
    const { http, registry } = await start();
    const res = await http.get('/metrics').expect(200);
    assert.equal(res.headers['content-type'], registry.contentType);
    assert.match(res.text, /^b2b_sidecar_token_valid\{credential="default"\} 1$/m);
    assert.match(res.text, /^b2b_sidecar_token_refresh_total\{result="unauthorized",credential="default"\} 0$/m);
  });

  it('starts the drain on POST /shutdown when enabled, after answering 202', async () => {
    let resolveCalled!: () => void;
    const called = new Promise<void>((resolve) => { resolveCalled = resolve; });
    const { http } = await start({ onShutdown: () => resolveCalled() });
    const res = await http.post('/shutdown').expect(202);
    assert.deepEqual(res.body, { message: 'draining' });
    await called;
    const wrong = await http.get('/shutdown').expect(405);
    assert.equal(wrong.headers.allow, 'POST');
  });

  it('answers POST /shutdown with 404 when shutdown is not enabled', async () => {
    const { http } = await start();
    assert.deepEqual((await http.post('/shutdown').expect(404)).body, { message: 'not found' });
  });

  it('refuses peers outside admin.allow with 403, ignoring X-Forwarded-For', async () => {
    let shutdowns = 0;
    const { http, capture } = await start({ allow: guard(['10.0.0.0/8']), onShutdown: () => { shutdowns++; } });
    for (const path of ['/healthz', '/readyz', '/metrics', '/nope']) {
      const res = await http.get(path).set('X-Forwarded-For', '10.0.0.1').expect(403);
      assert.deepEqual(res.body, { message: 'forbidden' });
    }
    await http.post('/shutdown').expect(403);
    assert.equal(shutdowns, 0);
    assert.ok(capture.lines().some((l) => l.level === 'warn' && l.source === '127.0.0.1'));
  });

  it('answers unknown paths with 404 JSON', async () => {
    const { http } = await start();
    assert.deepEqual((await http.get('/admin/../etc').expect(404)).body, { message: 'not found' });
    assert.deepEqual((await http.get('/healthz/extra').expect(404)).body, { message: 'not found' });
  });

  it('answers a wrong method on a known path with 405 and Allow', async () => {
    const { http } = await start();
    const res = await http.delete('/metrics').expect(405);
    assert.equal(res.headers.allow, 'GET, HEAD');
    assert.match(res.body.message, /DELETE/);
    await http.get('/healthz?probe=1').expect(200);
  });

  it('matches paths as the express app did: case and one trailing slash ignored', async () => {
    const { http } = await start();
    assert.deepEqual((await http.get('/healthz/').expect(200)).body, { status: 'ok' });
    assert.deepEqual((await http.get('/READYZ').expect(200)).body, { status: 'ready' });
    await http.get('/metrics/?x=1').expect(200);
    await http.get('/healthz//').expect(404);
    // Absolute-form request target (as sent to a forward proxy), which express also routed.
    const { port } = servers.at(-1)!.address() as AddressInfo;
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.end(`GET http://127.0.0.1:${port}/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
      let text = '';
      socket.on('data', (d) => (text += d));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    assert.match(raw, /^HTTP\/1\.1 200 /);
  });

  it('hides error details and stacks behind a generic 500 (docs/traps.md T16)', async () => {
    const { http, capture } = await start({
      health: () => { throw new Error('internal detail xyz'); },
    });
    const res = await http.get('/readyz').expect(500);
    assert.deepEqual(res.body, { message: 'internal error' });
    assert.doesNotMatch(res.text, /xyz|\bat\b/);
    const logged = capture.lines().find((l) => l.message === 'admin request failed') as Record<string, any>;
    assert.match(logged.err.stack, /internal detail xyz/);
  });

  it('renders /metrics once for any number of concurrent scrapes, and again only after SCRAPE_CACHE_MS', async () => {
    // 30 concurrent scrapers each rendering the registry cut proxied throughput ~100-fold.
    let now = 0;
    const { http, registry } = await start({ now: () => now });
    let renders = 0;
    const metrics = registry.metrics.bind(registry);
    registry.metrics = () => {
      renders++;
      return metrics();
    };
    const answers = await Promise.all(Array.from({ length: 30 }, () => http.get('/metrics')));
    assert.ok(answers.every((a) => a.status === 200 && /b2b_sidecar_token_valid\{credential="default"\} 1/.test(a.text)));
    assert.equal(answers[0]!.headers['content-type'], registry.contentType);
    assert.equal(renders, 1);
    now += SCRAPE_CACHE_MS - 1;
    await http.get('/metrics').expect(200);
    assert.equal(renders, 1, 'served from the same rendering');
    now += 1;
    await http.get('/metrics').expect(200);
    assert.equal(renders, 2);
  });

  it('does not keep a failed rendering: the next scrape renders again', async () => {
    const { http, registry } = await start({ now: () => 0 });
    let fail = true;
    const metrics = registry.metrics.bind(registry);
    registry.metrics = () => (fail ? Promise.reject(new Error('collect failed')) : metrics());
    await http.get('/metrics').expect(500);
    fail = false;
    await http.get('/metrics').expect(200);
  });

  it('turns a failing scrape into a generic 500 (docs/traps.md T26)', async () => {
    const registry = createRegistry();
    new Gauge({ name: 'broken', help: 'x', registers: [registry], collect() { throw new Error('collector blew up'); } });
    const { http } = await start({ registry });
    const res = await http.get('/metrics').expect(500);
    assert.deepEqual(res.body, { message: 'internal error' });
  });
});
