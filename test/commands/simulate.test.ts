import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { Agent, request } from 'undici';
import type { CommandIo, Signal } from '../../src/commands/io.js';
import { simulateCommand } from '../../src/commands/simulate.js';
import { loadTrustedCas, trustContext } from '../../src/shared/tls.js';

/** A CommandIo whose output is captured and whose signals the test fires by hand. */
function captureIo() {
  const out = { stdout: '', stderr: '' };
  const handlers = new Map<Signal, Array<() => void>>();
  const sink = (key: 'stdout' | 'stderr') =>
    new Writable({ write(chunk, _enc, done) { out[key] += String(chunk); done(); } });
  const io: CommandIo = {
    stdout: sink('stdout'),
    stderr: sink('stderr'),
    env: {},
    onSignal(signal, handler) {
      handlers.set(signal, [...(handlers.get(signal) ?? []), handler]);
    },
  };
  const fire = (signal: Signal) => handlers.get(signal)?.forEach((h) => h());
  return { io, out, fire, handlers };
}

async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((r) => setTimeout(r, 5));
}

test('simulate prints URL, CA file, credentials and control API, serves gentoken, stops on SIGINT', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'simulate-cmd-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const caOut = join(dir, 'ca.pem');
  const { io, out, fire, handlers } = captureIo();
  const running = simulateCommand({ port: 0, ttl: 120, apiKey: 'it-key', password: "it's-secret", caOut }, io);
  // On any failure below, still stop the simulator so the test process can end.
  t.after(async () => { fire('SIGTERM'); await running; });
  await until(() => out.stdout.includes('Press Ctrl-C') || out.stderr !== '');
  assert.equal(out.stderr, '');
  assert.ok(handlers.has('SIGINT') && handlers.has('SIGTERM'));

  const url = /listening on (https:\/\/127\.0\.0\.1:\d+)/.exec(out.stdout)?.[1];
  assert.ok(url, out.stdout);
  assert.match(out.stdout, new RegExp(`CA certificate: ${caOut}`));
  assert.match(out.stdout, /ApiKey=it-key password=it's-secret/);
  assert.match(out.stdout, /tokens live 120 s/);
  assert.match(out.stdout, /POST \/_simulator\/faults/);
  assert.match(out.stdout, /GET {2}\/_simulator\/stats/);
  // The printed curl line quotes the password for the shell.
  assert.ok(out.stdout.includes(`-d '{"password":"it'\\''s-secret"}'`), out.stdout);
  assert.match(readFileSync(caOut, 'utf8'), /BEGIN CERTIFICATE/);

  // What the printed curl line does, trusting the printed CA file.
  const dispatcher = new Agent({ connect: { secureContext: trustContext(loadTrustedCas(caOut)) } });
  t.after(() => dispatcher.close());
  const res = await request(`${url}/pub/b2b/v1/auth/gentoken`, {
    dispatcher, method: 'POST',
    headers: { 'content-type': 'application/json', apikey: 'it-key' },
    body: JSON.stringify({ password: "it's-secret" }),
  });
  assert.equal(res.statusCode, 200);
  const body = (await res.body.json()) as { token: string; aliveSecondsTtl: number };
  assert.equal(body.aliveSecondsTtl, 120);
  const echo = await request(`${url}/pub/b2b/v1/echo`, { dispatcher, headers: { authorization: `Bearer ${body.token}`, apikey: 'it-key' } });
  assert.equal(echo.statusCode, 200);
  await echo.body.text();

  fire('SIGINT');
  assert.equal(await running, 0);
  assert.match(out.stdout, /Simulator stopped/);
  await assert.rejects(request(`${url}/_simulator/stats`, { dispatcher }));
});

test('simulate writes the CA to a temp file by default and applies --latency-ms', async (t) => {
  const { io, out, fire } = captureIo();
  const running = simulateCommand({ port: 0, latencyMs: 5 }, io);
  t.after(async () => { fire('SIGTERM'); await running; });
  await until(() => out.stdout.includes('Press Ctrl-C') || out.stderr !== '');
  const caPath = /CA certificate: (\S+)/.exec(out.stdout)?.[1];
  assert.ok(caPath);
  t.after(() => rmSync(join(caPath, '..'), { recursive: true, force: true }));
  assert.match(readFileSync(caPath, 'utf8'), /BEGIN CERTIFICATE/);
  assert.match(out.stdout, /ApiKey=demo-api-key password=demo-password {2}\(tokens live 900 s\)/);
  assert.match(out.stdout, /Added latency: 5 ms/);
  fire('SIGTERM');
  assert.equal(await running, 0);
});

test('simulate exits 2 on invalid arguments and 1 when the port is taken', async (t) => {
  const bad = captureIo();
  assert.equal(await simulateCommand({ port: 0, allow: ['10.1/16'] }, bad.io), 2);
  assert.match(bad.out.stderr, /10\.1\/16/);
  assert.equal(await simulateCommand({ port: 0, latencyMs: Number('soon') }, captureIo().io), 2);
  assert.equal(await simulateCommand({ port: 0, ttl: 1.5 }, captureIo().io), 2);

  const first = captureIo();
  const running = simulateCommand({ port: 0 }, first.io);
  t.after(async () => { first.fire('SIGTERM'); await running; });
  await until(() => first.out.stdout.includes('Press Ctrl-C'));
  const port = Number(/listening on https:\/\/127\.0\.0\.1:(\d+)/.exec(first.out.stdout)?.[1]);
  const second = captureIo();
  assert.equal(await simulateCommand({ port }, second.io), 1);
  assert.match(second.out.stderr, /cannot start/);
});

test('simulate removes the temporary folder of its CA file on exit, and keeps a --ca-out file', async () => {
  const own = captureIo();
  const running = simulateCommand({ port: 0 }, own.io);
  await until(() => own.out.stdout.includes('Press Ctrl-C'));
  const ca = /^CA certificate: (\S+)/m.exec(own.out.stdout)![1]!;
  assert.ok(existsSync(ca));
  own.fire('SIGTERM');
  assert.equal(await running, 0);
  assert.equal(existsSync(ca), false, `${ca} removed`);
  assert.equal(existsSync(dirname(ca)), false, 'and its folder');

  const dir = mkdtempSync(join(tmpdir(), 'b2b-sim-ca-out-'));
  try {
    const keep = join(dir, 'ca.pem');
    const given = captureIo();
    const second = simulateCommand({ port: 0, caOut: keep }, given.io);
    await until(() => given.out.stdout.includes('Press Ctrl-C'));
    given.fire('SIGTERM');
    assert.equal(await second, 0);
    assert.ok(existsSync(keep), 'a file the user named stays');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
