import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Agent, request, type OutgoingHttpHeaders } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { describe, it } from 'node:test';
import { ENGINES, startSidecar, waitReady, type Engine, type RunningSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * A service that counts the TLS connections it accepts and answers every request with what it
 * received (method, body length and hash), so a request whose body was framed wrongly on a reused
 * connection shows up as a wrong answer, not only as a count.
 */
async function startCountingService(): Promise<{ url: string; readonly connections: number; close(): Promise<void> }> {
  const tls = await testTls();
  let connections = 0;
  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (chunk: Buffer) => { bytes += chunk.length; hash.update(chunk); });
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url === '/pub/b2b/v1/auth/gentoken') return void res.end(JSON.stringify({ token: 'tok-reuse-0123456789', refreshToken: null, aliveSecondsTtl: 900 }));
      res.end(JSON.stringify({ method: req.method, bytes, sha256: hash.digest('hex') }));
    });
  });
  // Neither side's idle timeout may end a connection between two requests, however slow the host.
  server.keepAliveTimeout = 120_000;
  server.on('secureConnection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `https://localhost:${(server.address() as AddressInfo).port}`,
    get connections() { return connections; },
    close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}

interface Step { method: string; body?: Buffer; chunked?: boolean }

/** Sends `steps` one after another over the single keep-alive connection of `agent`. */
async function sendAll(s: RunningSidecar, agent: Agent, steps: Step[]): Promise<Set<Socket>> {
  const sockets = new Set<Socket>();
  for (const [i, step] of steps.entries()) {
    const headers: OutgoingHttpHeaders = {};
    if (step.body) headers[step.chunked ? 'transfer-encoding' : 'content-length'] = step.chunked ? 'chunked' : String(step.body.length);
    const answer = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: s.port, method: step.method, path: `/rest/items/${i}`, headers, agent }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('socket', (socket) => sockets.add(socket));
      req.on('error', reject);
      req.end(step.body);
    });
    const body = step.body ?? Buffer.alloc(0);
    assert.equal(answer.status, 200, `request ${i} (${step.method})`);
    assert.deepEqual(JSON.parse(answer.body), { method: step.method, bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') }, `request ${i} (${step.method}) reached the service as sent`);
  }
  return sockets;
}

async function withSidecar(engine: Engine, proxy: Record<string, unknown>, fn: (s: RunningSidecar, service: Awaited<ReturnType<typeof startCountingService>>) => Promise<void>): Promise<void> {
  const service = await startCountingService();
  const s = await startSidecar({ baseUrl: service.url, engine, overrides: { proxy: { keepAliveTimeoutMs: 120_000, ...proxy } } });
  try {
    await waitReady(s);
    await fn(s, service);
  } finally {
    await s.stop();
    await service.close();
  }
}

/** A body of `n` bytes that differs per request. */
const bodyOf = (n: number, seed: number) => Buffer.alloc(n, String.fromCharCode(97 + (seed % 26)));

for (const engine of ENGINES) {
  describe(`service connections reused across methods (engine ${engine})`, () => {
    it('keeps one service connection when a client connection alternates GET and POST, both with a body (as wrk sends them)', async () => {
      await withSidecar(engine, {}, async (s, service) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        try {
          const before = service.connections;
          const steps: Step[] = Array.from({ length: 30 }, (_, i) => ({ method: i % 2 ? 'POST' : 'GET', body: bodyOf(4096, i) }));
          const sockets = await sendAll(s, agent, steps);
          assert.equal(sockets.size, 1, 'one client connection');
          const opened = service.connections - before;
          assert.ok(opened <= 2, `${steps.length} requests opened ${opened} service connections`);
        } finally {
          agent.destroy();
        }
      });
    });

    it('keeps it for bodies on DELETE and OPTIONS, chunked and streamed bodies, and requests without one', async () => {
      await withSidecar(engine, { replayBodyLimitBytes: 64 * 1024 }, async (s, service) => {
        const agent = new Agent({ keepAlive: true, maxSockets: 1 });
        try {
          const before = service.connections;
          const kinds: Step[] = [
            { method: 'GET' },
            { method: 'DELETE', body: bodyOf(17, 1) },
            { method: 'POST', body: bodyOf(300, 2) },
            { method: 'GET', body: bodyOf(2048, 3), chunked: true },
            { method: 'OPTIONS', body: bodyOf(5, 4) },
            // Beyond proxy.replayBodyLimitBytes (64 KiB here): streamed, not received whole first.
            { method: 'GET', body: bodyOf(256 * 1024, 5) },
            { method: 'PUT', body: bodyOf(64, 6) },
          ];
          const steps = [...kinds, ...kinds, ...kinds];
          const sockets = await sendAll(s, agent, steps);
          assert.equal(sockets.size, 1, 'one client connection');
          const opened = service.connections - before;
          assert.ok(opened <= 2, `${steps.length} requests opened ${opened} service connections`);
        } finally {
          agent.destroy();
        }
      });
    });
  });
}
