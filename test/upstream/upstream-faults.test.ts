import assert from 'node:assert/strict';
import { request, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, createServer } from 'node:net';
import { describe, it } from 'node:test';
import { ENGINES, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/** An upstream answer far larger than every buffer on the way, written with back-pressure. */
function endlessAnswer(_req: IncomingMessage, res: ServerResponse): void {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const total = 64 * 1024 * 1024;
  let written = 0;
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
  const pump = () => {
    while (written < total && !res.destroyed) {
      written += chunk.length;
      if (!res.write(chunk)) return void res.once('drain', pump);
    }
    res.end();
  };
  pump();
}

/** A client that receives the response headers, then never reads. */
function openPaused(port: number, path: string): Promise<IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      res.pause();
      resolve(res);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits until the in-flight gauge is back to 0. */
async function inflightDrops(s: RunningSidecar, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!/^b2b_sidecar_inflight_requests 0$/m.test(await s.sidecar.registry.metrics())) {
    assert.ok(Date.now() < deadline, `the in-flight gauge did not return to 0 within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function within<T>(ms: number, promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms); });
  return Promise.race([promise, expired]).finally(() => clearTimeout(timer));
}

for (const engine of ENGINES) {
  describe(`upstream faults (engine ${engine})`, () => {
    it('answers 503 with a reason while no token can be obtained, and stays up', async () => {
      // A port that refuses connections: bind, read the port, close.
      const probe = createServer();
      await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
      const port = (probe.address() as { port: number }).port;
      await new Promise<void>((r) => probe.close(() => r()));
      const s = await startSidecar({ baseUrl: `https://localhost:${port}`, engine });
      try {
        await new Promise((r) => setTimeout(r, 100));
        const res = await send(s.port, { path: '/pub/b2b/v1/echo' });
        assert.equal(res.status, 503);
        assert.match(res.json<{ message: string }>().message, /refused the connection|no token/);
        assert.equal(res.headers['retry-after'], '1');
        const ready = await send(s.adminPort, { path: '/readyz' });
        assert.equal(ready.status, 503);
        const health = await send(s.adminPort, { path: '/healthz' });
        assert.equal(health.status, 200);
      } finally {
        await s.stop();
      }
    });

    it('maps a header timeout to 504', async () => {
      const up = await startUpstream((_req, res) => setTimeout(() => { res.end('late'); }, 1500));
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { proxy: { timeoutMs: 200 } } });
      try {
        await waitReady(s);
        const res = await send(s.port, { path: '/slow' });
        assert.equal(res.status, 504);
        assert.equal(res.json<{ message: string }>().message, 'the service did not answer in time');
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('maps a connection reset to 502', async () => {
      const up = await startUpstream((req) => req.socket.destroy());
      const s = await startSidecar({ baseUrl: up.url, engine });
      try {
        await waitReady(s);
        const res = await send(s.port, { path: '/reset' });
        assert.equal(res.status, 502);
        assert.match(res.json<{ message: string }>().message, /reset|failed/);
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('releases the upstream request when the client aborts (docs/traps.md T4)', async () => {
      const up = await startUpstream((_req, res) => { res.writeHead(200); res.write('partial'); /* never ends */ });
      const s = await startSidecar({ baseUrl: up.url, engine });
      try {
        await waitReady(s);
        await new Promise<void>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port: s.port, path: '/hang', agent: false }, (res) => {
            res.once('data', () => { req.destroy(); resolve(); });
          });
          req.on('error', () => undefined);
          req.end();
          setTimeout(() => reject(new Error('no response headers')), 3000);
        });
        await up.waitOpen(0);
        assert.equal(up.open, 0);
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('passes the final answer after an interim 103 Early Hints', async () => {
      const up = await startUpstream((_req, res) => {
        res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('final');
      });
      const s = await startSidecar({ baseUrl: up.url, engine });
      try {
        await waitReady(s);
        const res = await send(s.port, { path: '/hints' });
        assert.equal(res.status, 200);
        assert.equal(res.body.toString(), 'final');
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('streams a large answer to a client that stops reading with back-pressure, then delivers it whole', async () => {
      const total = 96 * 1024 * 1024;
      const chunk = Buffer.alloc(64 * 1024, 0x61);
      let written = 0;
      const up = await startUpstream((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
        const pump = () => {
          while (written < total) {
            written += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      });
      const s = await startSidecar({ baseUrl: up.url, engine });
      try {
        await waitReady(s);
        const res = await new Promise<import('node:http').IncomingMessage>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port: s.port, path: '/big', agent: false }, resolve);
          req.on('error', reject);
          req.end();
        });
        res.pause();
        // Wait until the upstream stops making progress: every buffer on the way is full.
        let last = -1;
        while (written !== last) {
          last = written;
          await new Promise((r) => setTimeout(r, 250));
        }
        // Without back-pressure the proxy would have read (and held) the whole answer.
        assert.ok(written < total / 2, `upstream wrote ${written} of ${total} bytes while the client read nothing`);
        let received = 0;
        res.on('data', (c: Buffer) => { received += c.length; });
        res.resume();
        await new Promise((r) => res.once('end', r));
        assert.equal(received, total);
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('releases the upstream request when the client aborts before headers', async () => {
      const up = await startUpstream(() => { /* never answers */ });
      const s = await startSidecar({ baseUrl: up.url, engine });
      try {
        await waitReady(s);
        const req = request({ host: '127.0.0.1', port: s.port, path: '/hang', agent: false });
        req.on('error', () => undefined);
        req.end();
        while (up.open === 0) await new Promise((r) => setTimeout(r, 10));
        req.destroy();
        await up.waitOpen(0);
        assert.equal(up.open, 0);
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('renews the token after a 401 on a streamed (chunked) upload it cannot replay', async () => {
      const sim = await startSimulator();
      // Replay of bodies off: the chunked upload cannot be sent again.
      const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { proxy: { replayBodyLimitBytes: 0 } } });
      try {
        await waitReady(s);
        const issued = sim.stats.tokensIssued;
        sim.faults.revokeAll();
        const { request } = await import('node:http');
        const status = await new Promise<number>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/pub/b2b/v1/echo', agent: false }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('error', reject);
          req.write('chunk one');
          req.end('chunk two');
        });
        assert.equal(status, 401);
        while (sim.stats.tokensIssued === issued) await new Promise((r) => setTimeout(r, 10));
        assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo' })).status, 200);
      } finally {
        await s.stop();
        await sim.stop();
      }
    });

    it('lets a streamed upload take longer than the header deadline (the client is slow, not the service)', async () => {
      // The service answers as soon as the body is in.
      const up = await startUpstream((req, res) => {
        let bytes = 0;
        req.on('data', (c: Buffer) => (bytes += c.length));
        req.on('end', () => res.end(JSON.stringify({ bytes })));
      });
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { service: { timeoutMs: 300 }, proxy: { replayBodyLimitBytes: 0 } } });
      try {
        await waitReady(s);
        let req: ReturnType<typeof request> | undefined;
        const answer = await within(5000, new Promise<{ status: number; body: string }>((resolve, reject) => {
          req = request({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/pub/b2b/v1/upload', agent: false, headers: { 'content-length': 8 * 4096 } }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          });
          req.on('error', reject);
          // 8 pieces 150 ms apart: 1.05 s of upload against a 300 ms header deadline.
          let sent = 0;
          const next = () => {
            if (req!.destroyed) return;
            req!.write(Buffer.alloc(4096, 0x62));
            if (++sent < 8) setTimeout(next, 150);
            else req!.end();
          };
          next();
        }), 'the upload was never answered').finally(() => req?.destroy());
        assert.equal(answer.status, 200, answer.body);
        assert.deepEqual(JSON.parse(answer.body), { bytes: 8 * 4096 });
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('answers a request queued behind a client that stops reading with 504 at its deadline', async () => {
      const up = await startUpstream(endlessAnswer);
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { service: { timeoutMs: 500 }, proxy: { maxSockets: 1 } } });
      try {
        await waitReady(s);
        // A takes the only upstream connection and never reads its answer.
        const stalled = await openPaused(s.port, '/big');
        const started = Date.now();
        const res = await within(4000, send(s.port, { path: '/queued' }), 'the queued request was never answered');
        assert.equal(res.status, 504);
        assert.equal(res.json<{ message: string }>().message, 'the service did not answer in time');
        assert.ok(Date.now() - started < 2500, `answered after ${Date.now() - started} ms`);
        stalled.destroy();
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('cuts an answer a client stopped reading once the idle timeout has passed, and releases the upstream', async () => {
      const up = await startUpstream(endlessAnswer);
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { proxy: { idleTimeoutMs: 500 } } });
      try {
        await waitReady(s);
        const stalled = await openPaused(s.port, '/big');
        await within(4000, up.waitOpen(0), 'the upstream request was never released');
        // The client response is given up too (a paused client sees the close only once it reads).
        await inflightDrops(s, 2000);
        stalled.destroy();
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('releases pipelined requests, the in-flight gauge and their log lines when the client disconnects', async () => {
      const up = await startUpstream(() => { /* never answers */ });
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { log: { requests: true } } });
      try {
        await waitReady(s);
        const socket = connect(s.port, '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write('GET /slow1 HTTP/1.1\r\nHost: x\r\n\r\nGET /slow2 HTTP/1.1\r\nHost: x\r\n\r\n');
        // A connection's requests go upstream in arrival order (docs/traps.md T32): /slow2 waits for /slow1's answer.
        while (up.open < 1) await new Promise((r) => setTimeout(r, 10));
        socket.destroy();
        await within(3000, up.waitOpen(0), 'an upstream request outlived its client');
        await inflightDrops(s, 3000);
        assert.deepEqual(up.seen.map((r) => r.url), ['/slow1'], 'the queued request never went upstream once its client was gone');
        const logged = s.log.lines().filter((l) => l.message === 'request');
        assert.equal(logged.length, 1, 'one access log line per request handled');
        assert.deepEqual(logged.map((l) => l.status), [499]);
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('passes a 401 back for a body too large to replay', async () => {
      const sim = await startSimulator();
      const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { proxy: { replayBodyLimitBytes: 1024 } } });
      try {
        await waitReady(s);
        sim.faults.revokeAll();
        const body = Buffer.alloc(4096, 1);
        const res = await send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', body, headers: { 'content-length': body.length } });
        assert.equal(res.status, 401);
        // The 401 still invalidated nothing by itself; the next bodiless request is replayed.
        const next = await send(s.port, { path: '/pub/b2b/v1/echo' });
        assert.equal(next.status, 200);
      } finally {
        await s.stop();
        await sim.stop();
      }
    });
  });
}
