import assert from 'node:assert/strict';
import { createServer as createHttpServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { CREDENTIALS, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from './helpers/stack.js';

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

  for (const path of ['//127.0.0.1/x', `//127.0.0.1:0/x`, '/..%2f..%2fx', '/pub/../x', '/%2e%2e/x']) {
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

  it('does not let a malformed pipelined request answer in place of the pending one', async () => {
    const answer = await raw(s.port,
      'GET /pub/b2b/v1/slow?ms=300 HTTP/1.1\r\nHost: x\r\n\r\n' +
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(32 * 1024)}\r\n\r\n`);
    assert.doesNotMatch(answer, /^HTTP\/1\.1 431/, 'the first bytes must not be a 431 for the second request');
  });

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

  it('normalises IPv4-mapped sources on a dual-stack listener (PITFALLS 18)', async () => {
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
