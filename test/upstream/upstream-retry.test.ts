import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { describe, it } from 'node:test';
import { FakeClock } from '../helpers/fake-clock.js';
import { ENGINES, send, startSidecar, waitReady, type Engine, type RunningSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

const SERVED = Symbol('served');
type CountedSocket = Socket & { [SERVED]?: number };

/**
 * A service that plays the keep-alive race deterministically: the second request on any
 * connection finds it closed (the socket is cut before a byte is answered), as when the service
 * closed an idle connection just as the sidecar reused it. `/always-cut` is cut even on a new
 * connection (a failure that is not the race). Everything else is echoed with its body's hash.
 */
async function startStaleService() {
  const tls = await testTls();
  const seen: Array<{ method: string; url: string; fresh: boolean; cut: boolean }> = [];
  const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req: IncomingMessage, res: ServerResponse) => {
    if (req.url === '/pub/b2b/v1/auth/gentoken') {
      req.resume();
      req.on('end', () => res.end(JSON.stringify({ token: 'tok-retry-0123456789', refreshToken: null, aliveSecondsTtl: 900 })));
      return;
    }
    const socket = req.socket as CountedSocket;
    const n = (socket[SERVED] = (socket[SERVED] ?? 0) + 1);
    if (n > 1 && req.url?.startsWith('/processed-then-cut')) {
      // The service reads the request and acts on it, then its connection dies before it answers
      // (a worker crash, a restart cutting connections): not the keep-alive race.
      seen.push({ method: req.method ?? '', url: req.url, fresh: false, cut: true });
      if (req.url.endsWith('/interim')) res.writeProcessing();
      req.resume();
      req.on('end', () => setTimeout(() => socket.destroy(), req.url!.endsWith('/interim') ? 0 : 500));
      return;
    }
    const cut = n > 1 || req.url === '/always-cut';
    seen.push({ method: req.method ?? '', url: req.url ?? '', fresh: n === 1, cut });
    if (cut) return void socket.destroy();
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (c: Buffer) => { hash.update(c); bytes += c.length; });
    req.on('end', () => res.end(JSON.stringify({ method: req.method, bytes, sha256: hash.digest('hex'), authorization: req.headers.authorization })));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://localhost:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }),
  };
}

async function retries(s: RunningSidecar): Promise<number> {
  const text = await s.sidecar.registry.metrics();
  return [...text.matchAll(/^b2b_sidecar_upstream_retries_total\{reason="\w+"\} (\d+)$/gm)].reduce((n, m) => n + Number(m[1]), 0);
}

async function withService(engine: Engine, overrides: Record<string, unknown>, fn: (s: RunningSidecar, up: Awaited<ReturnType<typeof startStaleService>>) => Promise<void>, clock?: FakeClock) {
  const up = await startStaleService();
  const s = await startSidecar({ baseUrl: up.url, engine, overrides, ...(clock ? { clock } : {}) });
  try {
    await waitReady(s);
    await fn(s, up);
  } finally {
    await s.stop();
    await up.close();
  }
}

for (const engine of ENGINES) {
  describe(`retry after a stale keep-alive connection (engine ${engine})`, () => {
    it('sends a GET once more on a fresh connection when the reused one was closed under it', async () => {
      await withService(engine, {}, async (s, up) => {
        assert.equal((await send(s.port, { path: '/warm' })).status, 200);
        const res = await send(s.port, { path: '/again' });
        assert.equal(res.status, 200, 'the client never sees the race');
        assert.equal(res.json().authorization, 'Bearer tok-retry-0123456789', 'the retry carries the token');
        assert.deepEqual(up.seen.map((r) => [r.url, r.fresh, r.cut]), [['/warm', true, false], ['/again', false, true], ['/again', true, false]]);
        assert.equal(await retries(s), 1);
        assert.ok(s.log.lines().some((l) => l.level === 'debug' && String(l.message).startsWith('retrying on a fresh connection')));
      });
    });

    it('retries a POST whose body was copied for replay, with the same body', async () => {
      await withService(engine, { proxy: { replayBodyLimitBytes: 4096 } }, async (s, up) => {
        await send(s.port, { path: '/warm' });
        const body = Buffer.alloc(3000, 'p');
        const res = await send(s.port, { method: 'POST', path: '/orders', body, headers: { 'content-length': body.length } });
        assert.equal(res.status, 200);
        assert.equal(res.json().bytes, 3000);
        assert.equal(res.json().sha256, createHash('sha256').update(body).digest('hex'));
        assert.deepEqual(up.seen.filter((r) => r.url === '/orders').map((r) => r.cut), [true, false]);
        assert.equal(await retries(s), 1);
      });
    });

    it('does not retry a POST whose streamed body was not copied: the client gets the 502', async () => {
      await withService(engine, { proxy: { replayBodyLimitBytes: 1024 } }, async (s, up) => {
        await send(s.port, { path: '/warm' });
        const body = Buffer.alloc(64 * 1024, 'q');
        const res = await send(s.port, { method: 'POST', path: '/upload', body, headers: { 'content-length': body.length } });
        assert.equal(res.status, 502);
        assert.equal(up.seen.filter((r) => r.url === '/upload').length, 1, 'sent once only');
        assert.equal(await retries(s), 0);
      });
    });

    it('does not send a POST again when the connection died after the service had it (too long after it was sent)', async () => {
      await withService(engine, {}, async (s, up) => {
        await send(s.port, { path: '/warm' });
        const res = await send(s.port, { method: 'POST', path: '/processed-then-cut', body: '{"qty":1}', headers: { 'content-length': 9 } });
        assert.equal(res.status, 502);
        assert.equal(up.seen.filter((r) => r.url === '/processed-then-cut').length, 1, 'the order reached the service once');
        assert.equal(await retries(s), 0);
      });
    });

    it('does not send a request again after an interim 1xx answer (the service had it)', async () => {
      await withService(engine, {}, async (s, up) => {
        await send(s.port, { path: '/warm' });
        const res = await send(s.port, { method: 'POST', path: '/processed-then-cut/interim', body: '{"qty":1}', headers: { 'content-length': 9 } });
        assert.equal(res.status, 502);
        assert.equal(up.seen.filter((r) => r.url === '/processed-then-cut/interim').length, 1);
        assert.equal(await retries(s), 0);
      });
    });

    it('still retries an idempotent GET whose connection died later before any answer', async () => {
      await withService(engine, {}, async (s, up) => {
        await send(s.port, { path: '/warm' });
        const res = await send(s.port, { path: '/processed-then-cut' });
        assert.equal(res.status, 200);
        assert.equal(up.seen.filter((r) => r.url === '/processed-then-cut').length, 2);
        assert.equal(await retries(s), 1);
      });
    });

    it('does not retry a chunked POST whose copy was given up (it outgrew the limit)', async () => {
      await withService(engine, { proxy: { replayBodyLimitBytes: 1024 } }, async (s, up) => {
        await send(s.port, { path: '/warm' });
        const res = await send(s.port, { method: 'POST', path: '/chunked', body: Buffer.alloc(8192, 'c'), headers: { 'transfer-encoding': 'chunked' } });
        assert.equal(res.status, 502);
        assert.equal(up.seen.filter((r) => r.url === '/chunked').length, 1);
        assert.equal(await retries(s), 0);
      });
    });

    it('does not retry a failure on a new connection (not the keep-alive race)', async () => {
      await withService(engine, {}, async (s, up) => {
        const res = await send(s.port, { path: '/always-cut' });
        assert.equal(res.status, 502);
        assert.equal(up.seen.filter((r) => r.url === '/always-cut').length, 1);
        assert.equal(await retries(s), 0);
      });
    });

    it('honours the service\'s Keep-Alive: timeout=N hint over a longer proxy.keepAliveTimeoutMs (N − 1 s)', async () => {
      const tls = await testTls();
      const sockets: Socket[] = [];
      const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
        if (req.url !== '/pub/b2b/v1/auth/gentoken' && !sockets.includes(req.socket)) sockets.push(req.socket);
        req.resume();
        req.on('end', () => res.end(JSON.stringify({ token: 'tok-hint-0123456789', refreshToken: null, aliveSecondsTtl: 900 })));
      });
      // Node announces `Keep-Alive: timeout=3` and really closes idle connections after 3.5 s.
      server.keepAliveTimeout = 3500;
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const s = await startSidecar({ baseUrl: `https://localhost:${(server.address() as AddressInfo).port}`, engine, overrides: { proxy: { keepAliveTimeoutMs: 60_000 } } });
      try {
        await waitReady(s);
        assert.equal((await send(s.port, { path: '/one' })).status, 200);
        await new Promise((r) => setTimeout(r, 500));
        assert.equal((await send(s.port, { path: '/two' })).status, 200);
        assert.equal(sockets.length, 1, 'kept alive within the announced timeout');
        await new Promise((r) => setTimeout(r, 2300));
        assert.equal((await send(s.port, { path: '/three' })).status, 200);
        assert.equal(sockets.length, 2, 'not kept past the announced timeout less a margin');
      } finally {
        await s.stop();
        await new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); });
      }
    });

    it('learns nothing from a client that gives up on a request over a reused connection', async () => {
      const up = await startStaleService();
      // The sidecar's own clock says the connection idled a second: only a service reset may teach that.
      const clock = new FakeClock();
      const s = await startSidecar({ baseUrl: up.url, engine, clock });
      try {
        await waitReady(s);
        await send(s.port, { path: '/warm' });
        clock.advance(1000);
        await new Promise<void>((resolve) => {
          const req = httpRequest({ host: '127.0.0.1', port: s.port, path: '/processed-then-cut', agent: false });
          req.on('error', () => resolve());
          req.end();
          setTimeout(() => { req.destroy(); resolve(); }, 100);
        });
        await new Promise((r) => setTimeout(r, 200));
        assert.deepEqual(s.log.lines().filter((l) => String(l.message).includes('closes idle connections sooner')), []);
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('learns the service\'s idle timeout from the idle age of the reset connection (injected clock)', async () => {
      const clock = new FakeClock();
      await withService(engine, {}, async (s) => {
        await send(s.port, { path: '/warm' });
        clock.advance(1000); // the connection idles for one second of the sidecar's clock
        assert.equal((await send(s.port, { path: '/again' })).status, 200);
        const learned = s.log.lines().filter((l) => String(l.message).includes('closes idle connections sooner'));
        assert.deepEqual(learned.map((l) => [l.level, l.observedIdleMs, l.timeoutMs, l.previousMs]), [['info', 1000, 750, 4000]]);
      }, clock);
    });
  });
}
