import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLocalizationSimulator, type LocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { CREDENTIALS, ENGINES, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';

/** Sends raw bytes and returns everything the listener answers until it closes. */
function raw(port: number, text: string, host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, host, () => socket.write(text));
    let data = '';
    socket.setTimeout(3000, () => socket.destroy());
    socket.on('data', (d) => (data += d));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('never an open proxy', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  let s: RunningSidecar;
  let canary: Server;
  let canaryPort: number;
  let canaryHits = 0;

  before(async () => {
    sim = await startSimulator();
    s = await startSidecar({ baseUrl: sim.baseUrl });
    await waitReady(s);
    canary = createHttpServer((_req, res) => { canaryHits++; res.end('canary'); });
    canary.on('connection', () => canaryHits++);
    await new Promise<void>((r) => canary.listen(0, '127.0.0.1', r));
    canaryPort = (canary.address() as { port: number }).port;
  });
  after(async () => {
    assert.equal(canaryHits, 0, 'the canary server must never be contacted');
    await s.stop();
    await sim.stop();
    await new Promise<void>((r) => canary.close(() => r()));
  });

  it('refuses an absolute-form request target', async () => {
    const res = await send(s.port, { path: `http://127.0.0.1:${canaryPort}/x` });
    assert.equal(res.status, 400);
  });

  it('refuses CONNECT', async () => {
    const answer = await raw(s.port, `CONNECT 127.0.0.1:${canaryPort} HTTP/1.1\r\nHost: 127.0.0.1:${canaryPort}\r\n\r\n`);
    assert.match(answer, /^HTTP\/1\.1 405/);
    assert.match(answer, /"message":"CONNECT is not supported/);
  });

  it('sends a request with a foreign Host header to the service, not to that host', async () => {
    const before = sim.stats.apiRequests;
    const res = await send(s.port, { path: '/pub/b2b/v1/echo', headers: { host: `127.0.0.1:${canaryPort}` } });
    assert.equal(res.status, 200);
    assert.equal(sim.stats.apiRequests, before + 1);
  });

  for (const path of ['//127.0.0.1/x', `//127.0.0.1:0/x`, '/..%2f..%2fx', '/pub/../x', '/%2e%2e/x',
    // Matrix parameters: Tomcat, Jetty and Spring read `..;` as `..`, escaping the base path.
    '/pub/b2b/v1/..;/..;/admin', '/pub/%2e%2e;/x', '/a/..%3b/b', '/;x/127.0.0.1/x']) {
    it(`refuses the path ${path}`, async () => {
      const before = sim.stats.apiRequests;
      const res = await send(s.port, { path });
      assert.equal(res.status, 400);
      assert.equal(typeof res.json().message, 'string');
      assert.equal(sim.stats.apiRequests, before);
    });
  }

  it('rejects Content-Length with Transfer-Encoding instead of forwarding two requests', async () => {
    const before = sim.stats.apiRequests;
    const smuggled = 'GET /pub/b2b/v1/echo/smuggled HTTP/1.1\r\nHost: x\r\n\r\n';
    const answer = await raw(s.port,
      `POST /pub/b2b/v1/echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${5 + smuggled.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`);
    assert.match(answer, /^HTTP\/1\.1 400/);
    assert.doesNotMatch(answer, /HTTP\/1\.1 200/);
    assert.equal(sim.stats.apiRequests, before);
  });

  it('refuses protocol upgrades', async () => {
    const answer = await raw(s.port, 'GET /pub/b2b/v1/echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 501/);
  });

  const pipelined: Array<[kind: string, second: () => string, wrong: RegExp]> = [
    ['a malformed', () => `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(32 * 1024)}\r\n\r\n`, /^HTTP\/1\.1 431/],
    ['an Upgrade', () => 'GET /pub/b2b/v1/echo HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n', /^HTTP\/1\.1 501/],
    ['a CONNECT', () => `CONNECT 127.0.0.1:${canaryPort} HTTP/1.1\r\nHost: 127.0.0.1:${canaryPort}\r\n\r\n`, /^HTTP\/1\.1 405/],
  ];
  for (const [kind, second, wrong] of pipelined) {
    it(`does not let ${kind} pipelined request answer in place of the pending one`, async () => {
      const answer = await raw(s.port, 'GET /pub/b2b/v1/slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n' + second());
      assert.doesNotMatch(answer, wrong, `the first bytes must not be the refusal of ${kind} request`);
    });
  }

  it('refuses oversized request headers with 431', async () => {
    const answer = await raw(s.port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(32 * 1024)}\r\n\r\n`);
    assert.match(answer, /^HTTP\/1\.1 431/);
  });

  it('keeps the ApiKey, password and token out of every log line', () => {
    const text = s.log.text();
    assert.ok(text.length > 0);
    for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, s.sidecar.tokens!.current()!.value]) {
      assert.equal(text.includes(secret), false, 'a secret appeared in the logs');
    }
  });
});

describe('routes that would hand the credentials back or leave the base path', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  let l10n: LocalizationSimulator;
  let s: RunningSidecar;

  before(async () => {
    sim = await startSimulator();
    l10n = createLocalizationSimulator({ token: 'wlu_localization_token_123456', tls: await testTls() });
    const { url } = await l10n.start();
    s = await startSidecar({
      baseUrl: sim.baseUrl,
      overrides: { localization: { baseUrl: url, caFile: (await testTls()).caFile, token: 'wlu_localization_token_123456', watch: ['demo/web/en'] } },
    });
    await waitReady(s);
  });
  after(async () => {
    await s.stop();
    await l10n.stop();
    await sim.stop();
  });

  for (const path of ['/l10n//evil.example/x', '/l10n/;x/evil.example/x', '/l10n/%3b/evil.example/x']) {
    it(`refuses ${path}, which starts with // once the prefix is removed`, async () => {
      const before = l10n.stats.count;
      const res = await send(s.port, { path });
      assert.equal(res.status, 400);
      assert.match(res.json<{ message: string }>().message, /must not start with \/\//);
      assert.equal(l10n.stats.count, before);
    });
  }

  // The read-only localization route refuses every method but GET and HEAD (405 with Allow) first.
  for (const [path, status] of [['/pub/b2b/v1/echo', 501], ['/l10n/api/translations/demo/web/en/', 405]] as const) {
    it(`answers TRACE on ${path} with ${status} without contacting anything`, async () => {
      const before = { api: sim.stats.apiRequests, l10n: l10n.stats.count };
      const res = await send(s.port, { method: 'TRACE', path });
      assert.equal(res.status, status);
      assert.equal(typeof res.json().message, 'string');
      assert.deepEqual({ api: sim.stats.apiRequests, l10n: l10n.stats.count }, before);
    });
  }

  it('refuses TRACK before it reaches the proxy (Node\'s parser knows no such method)', async () => {
    const before = sim.stats.apiRequests;
    const answer = await raw(s.port, 'TRACK /pub/b2b/v1/echo HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(answer, /^HTTP\/1\.1 4\d\d/);
    assert.equal(sim.stats.apiRequests, before);
  });
});

for (const engine of ENGINES) {
  it(`does not let a service that reflects TRACE hand the token and ApiKey back (engine ${engine})`, async () => {
    // A reflecting service, as TRACE is specified: the request comes back as the body.
    const up = await startUpstream((req, res) => {
      res.writeHead(200, { 'content-type': 'message/http' });
      res.end(`${req.method} ${req.url} HTTP/1.1\r\n${Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}`).join('\r\n')}\r\n\r\n`);
    });
    const s = await startSidecar({ baseUrl: up.url, engine });
    try {
      await waitReady(s);
      const res = await send(s.port, { method: 'TRACE', path: '/pub/b2b/v1/echo' });
      assert.equal(res.status, 501);
      const text = res.body.toString();
      assert.equal(text.includes(CREDENTIALS.apiKey), false, 'the ApiKey came back to the client');
      assert.equal(text.includes(s.sidecar.tokens!.current()!.value), false, 'the token came back to the client');
      assert.equal(up.seen.length, 0);
    } finally {
      await s.stop();
      await up.close();
    }
  });
}

describe('slow clients', () => {
  it('answers 408 to a client that never finishes its headers (headersTimeoutMs)', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { proxy: { headersTimeoutMs: 1000, requestTimeoutMs: 2000 } } });
    try {
      const started = Date.now();
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(s.port, '127.0.0.1', () => socket.write('GET /pub/b2b/v1/echo HTTP/1.1\r\nHost: x\r\nX-Slow: '));
        let data = '';
        socket.setTimeout(10_000, () => socket.destroy());
        socket.on('data', (d) => (data += d));
        socket.on('close', () => resolve(data));
        socket.on('error', reject);
      });
      assert.match(answer, /^HTTP\/1\.1 408/);
      assert.ok(Date.now() - started < 8000, 'cut well before Node\'s default 30 s check interval');
    } finally {
      await s.stop();
      await sim.stop();
    }
  });
});

describe('source guard on the listener', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  before(async () => { sim = await startSimulator(); });
  after(async () => { await sim.stop(); });

  it('denies a source outside guard.allow with 403, counts and logs it', async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { guard: { allow: ['10.0.0.0/8'] } } });
    try {
      const res = await send(s.port, { path: '/pub/b2b/v1/echo' });
      assert.equal(res.status, 403);
      assert.deepEqual(res.json(), { message: 'source address not allowed' });
      const metrics = await s.sidecar.registry.metrics();
      assert.match(metrics, /^b2b_sidecar_guard_denied_total 1$/m);
      assert.ok(s.log.lines().some((l) => l.message === 'request denied by the source guard' && l.source === '127.0.0.1'));
    } finally {
      await s.stop();
    }
  });

  it('normalises IPv4-mapped sources on a dual-stack listener (docs/traps.md T18)', async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { listen: { host: '::' } } });
    try {
      await waitReady(s);
      const res = await send(s.port, { path: '/pub/b2b/v1/echo' });
      assert.equal(res.status, 200);
    } finally {
      await s.stop();
    }
  });

  it('believes X-Forwarded-For only from a trusted proxy', async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { guard: { allow: ['192.168.1.0/24'], trustedProxies: ['127.0.0.1/32'] } } });
    try {
      await waitReady(s);
      assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo', headers: { 'x-forwarded-for': '192.168.1.5' } })).status, 200);
      assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo' })).status, 403);
      assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo', headers: { 'x-forwarded-for': '192.168.1.5, 8.8.8.8' } })).status, 403);
      assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo', headers: { 'x-forwarded-for': 'garbage' } })).status, 403);
    } finally {
      await s.stop();
    }
  });
});
