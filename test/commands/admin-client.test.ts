import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { askAdmin } from '../../src/observability/admin-client.js';
import { createListener } from '../../src/proxy/listener/listener.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { runCli } from '../helpers/cli.js';
import { CREDENTIALS, startSidecar, startSimulator } from '../helpers/stack.js';

/**
 * `wait` and `healthcheck` (the built CLI, whole processes) against admin ports that misbehave:
 * one that drips its answer a byte every 100 ms (an inactivity timeout never fires) and one that
 * sends a body without end. Each must end non-zero within its deadline, saying why.
 */

/** A raw TCP server playing a broken admin listener: `behave` gets each connection. */
async function fakeAdmin(behave: (socket: Socket) => void): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.once('close', () => sockets.delete(socket));
    socket.once('data', () => behave(socket)); // answer once the request has arrived
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

/** 200 with a 1000-byte body sent one byte every 100 ms: complete after 100 s. */
const drip = (socket: Socket) => {
  socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n');
  const timer = setInterval(() => (socket.writable ? socket.write(' ') : clearInterval(timer)), 100);
  socket.once('close', () => clearInterval(timer));
};

/** 200 with a chunked body that never ends. */
const endless = (socket: Socket) => {
  socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
  const chunk = `400\r\n${'x'.repeat(0x400)}\r\n`;
  const timer = setInterval(() => (socket.writable ? socket.write(chunk) : clearInterval(timer)), 5);
  socket.once('close', () => clearInterval(timer));
};

function adminConfig(port: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'b2b-admin-client-'));
  const file = join(dir, 'sidecar.json');
  writeFileSync(file, JSON.stringify({ service: { baseUrl: 'https://127.0.0.1:1' }, credentials: CREDENTIALS, admin: { host: '127.0.0.1', port } }));
  return file;
}

async function timed<T>(work: Promise<T>): Promise<T & { ms: number }> {
  const began = performance.now();
  const result = await work;
  return { ...result, ms: performance.now() - began };
}

describe('wait and healthcheck against a misbehaving admin port', () => {
  for (const [name, behave] of [['dripping', drip], ['endless', endless]] as const) {
    it(`wait --timeout 3s ends with exit 1 within its deadline against a ${name} answer`, async (t) => {
      const admin = await fakeAdmin(behave);
      t.after(() => admin.close());
      const run = await timed(runCli(['wait', '--timeout', '3s', '--admin', `http://127.0.0.1:${admin.port}`]));
      assert.equal(run.code, 1, run.stderr);
      assert.match(run.stderr, /^not ready after 3 s: http:\/\/127\.0\.0\.1:\d+\/readyz last (ask: timeout|answer larger than 16384 bytes)/m);
      // The deadline, plus the process's own start and exit (a loaded machine: generous).
      assert.ok(run.ms < 3000 + 4000, `took ${Math.round(run.ms)} ms`);
    });

    it(`healthcheck ends with exit 1 within its deadline against a ${name} answer, never saying healthy`, async (t) => {
      const admin = await fakeAdmin(behave);
      t.after(() => admin.close());
      const run = await timed(runCli(['healthcheck', '--config', adminConfig(admin.port)]));
      assert.equal(run.code, 1, run.stderr);
      assert.equal(run.stdout, '');
      assert.match(run.stderr, name === 'dripping'
        ? /^unhealthy: http:\/\/127\.0\.0\.1:\d+\/healthz timeout: no complete answer within 3000 ms$/m
        : /^unhealthy: http:\/\/127\.0\.0\.1:\d+\/healthz answer larger than 16384 bytes/m);
      assert.ok(run.ms < 3000 + 4000, `took ${Math.round(run.ms)} ms`);
    });
  }
});

describe('the admin listener under idle connections', () => {
  it('eight idle connections from 127.0.0.1 do not fail healthcheck', async (t) => {
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    t.after(() => s.stop());
    const idle: Socket[] = [];
    t.after(() => idle.forEach((c) => c.destroy()));
    for (let i = 0; i < s.config.admin.maxConnectionsPerSource; i++) {
      const c = connect(s.adminPort, '127.0.0.1');
      c.on('error', () => undefined);
      await new Promise((r) => c.once('connect', r));
      idle.push(c);
    }
    const run = await runCli(['healthcheck', '--config', adminConfig(s.adminPort)]);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /^healthy: /);
  });

  it('closes an admin connection that sends no request within 2 s (408)', async (t) => {
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    t.after(() => s.stop());
    const c = connect(s.adminPort, '127.0.0.1');
    let answer = '';
    c.on('data', (d) => (answer += d));
    c.on('error', () => undefined);
    // Bounded by the test: far past the 2 s (Node checks every second) yet never open-ended.
    const closed = await Promise.race([
      new Promise<boolean>((r) => c.once('close', () => r(true))),
      new Promise<boolean>((r) => setTimeout(() => r(false), 8000).unref()),
    ]);
    c.destroy();
    assert.equal(closed, true, 'the idle connection was kept');
    assert.match(answer, /^HTTP\/1\.1 408 /);
  });

  it('reports the per-source refusal as such, not as an unhealthy answer', async (t) => {
    // The per-source cap as the admin listener applies it to any source it counts.
    const log = createCaptureLogger();
    const listener = createListener((_req, res) => res.end('{"status":"ok"}'), { requestTimeoutMs: 5000, headersTimeoutMs: 5000, maxHeaderBytes: 16384, maxConnections: 64, maxConnectionsPerSource: 1 }, log.logger, {});
    const port = await listener.listen('127.0.0.1', 0);
    t.after(() => listener.close(0));
    const holder = connect(port, '127.0.0.1');
    holder.on('error', () => undefined);
    t.after(() => holder.destroy());
    await new Promise((r) => holder.once('connect', r));
    const answer = await askAdmin(new URL(`http://127.0.0.1:${port}/healthz`), 3000);
    assert.equal(answer.status, 503);
    assert.match(answer.failure ?? '', /^refused: too many connections/);
  });
});
