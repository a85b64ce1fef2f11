import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { spawnCli } from '../helpers/cli.js';
import { CREDENTIALS, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * systemd's side of Type=notify, played by Python: an AF_UNIX datagram socket at NOTIFY_SOCKET that
 * prints each message as a JSON line, with the number of file descriptors it carried, and closes
 * them, which is what releases systemd-notify's barrier (docs/traps.md T37).
 */
const RECEIVER = `
import array, json, os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
print(json.dumps({"bound": True}), flush=True)
while True:
    msg, anc, _, _ = s.recvmsg(65536, socket.CMSG_SPACE(64 * 4))
    fds = array.array('i')
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
    for fd in fds:
        os.close(fd)
    print(json.dumps({"t": time.time(), "msg": msg.decode(), "fds": len(fds)}), flush=True)
`;

interface Datagram { t: number; msg: string; fds: number; fields: Record<string, string> }

function startReceiver(path: string) {
  const child = spawn('python3', ['-c', RECEIVER, path], { stdio: ['ignore', 'pipe', 'inherit'] });
  const got: Datagram[] = [];
  let bound!: () => void;
  const ready = new Promise<void>((r) => (bound = r));
  let buffered = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let nl;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffered.slice(0, nl)) as { bound?: boolean; t: number; msg: string; fds: number };
      buffered = buffered.slice(nl + 1);
      if (line.bound) bound();
      else got.push({ ...line, fields: Object.fromEntries(line.msg.split('\n').map((f) => [f.slice(0, f.indexOf('=')), f.slice(f.indexOf('=') + 1)])) });
    }
  });
  return { child, got, ready };
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function readyz(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/readyz', agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject);
  });
}

describe('systemd Type=notify (NOTIFY_SOCKET)', () => {
  it('sends READY=1 once the token is held, STATUS= lines, WATCHDOG=1 pings and STOPPING=1 on SIGTERM, each as MAINPID and behind a barrier', async (t) => {
    const tls = await testTls();
    const sim = await startSimulator();
    t.after(() => sim.stop());
    // The first token takes 1.5 s: READY=1 must wait for it, not for the listeners.
    sim.faults.setLatency(1500, 'token');
    const dir = mkdtempSync(join(tmpdir(), 'b2b-notify-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const socket = join(dir, 'notify');
    const receiver = startReceiver(socket);
    t.after(() => receiver.child.kill('SIGKILL'));
    await receiver.ready;
    const config = join(dir, 'sidecar.yaml');
    writeFileSync(config, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${sim.baseUrl}", caFile: "${tls.caFile}" }`,
      `credentials: { apiKey: "${CREDENTIALS.apiKey}", password: "${CREDENTIALS.password}" }`,
      '',
    ].join('\n'));
    // WATCHDOG_USEC of 1 s: a ping every 0.5 s.
    const sidecar = spawnCli(['run', '--config', config], { NOTIFY_SOCKET: socket, WATCHDOG_USEC: '1000000' });
    t.after(async () => {
      sidecar.child.kill('SIGKILL');
      await sidecar.exited;
    });
    const adminPort = Number((await sidecar.waitFor(/"admin":"127\.0\.0\.1:(\d+)"/))[1]);
    const messages = () => receiver.got.filter((d) => d.fields.BARRIER !== '1');
    const hasReady = () => messages().some((d) => d.fields.READY === '1');

    // Listening, no token yet: not ready, and systemd has not been told so.
    assert.equal(await readyz(adminPort), 503);
    assert.equal(hasReady(), false, 'READY=1 before the first token');
    const firstStatus = await until('a first STATUS=', () => messages().find((d) => d.fields.STATUS));
    assert.equal(firstStatus.fields.STATUS, 'not ready: no token yet');

    const ready = await until('READY=1', () => messages().find((d) => d.fields.READY === '1'));
    assert.equal(await readyz(adminPort), 200, 'READY=1 came with the token held');
    assert.equal(ready.fields.STATUS, 'ready');
    assert.ok(sidecar.stdout().includes('"message":"token obtained"'), 'the token was obtained before READY=1');

    const pingsAfterReady = () => messages().filter((d) => d.fields.WATCHDOG === '1' && d.t > ready.t).length;
    await until('three watchdog pings after READY=1', () => (pingsAfterReady() >= 3 ? true : undefined), 10_000);

    sidecar.child.kill('SIGTERM');
    assert.equal(await sidecar.exited, 0, sidecar.stderr());
    const stopping = await until('STOPPING=1', () => messages().find((d) => d.fields.STOPPING === '1'), 5_000);
    assert.equal(stopping.fields.STATUS, 'shutting down: draining');
    assert.ok(stopping.t > ready.t);

    // Every message names the sidecar as MAINPID and is followed by systemd-notify's barrier, a
    // BARRIER=1 carrying one pipe: the child waited until the message was read (T37).
    const all = receiver.got;
    assert.ok(all.length >= 2 * 5, JSON.stringify(all));
    for (let i = 0; i < all.length; i += 2) {
      assert.equal(all[i]!.fields.MAINPID, String(sidecar.child.pid), all[i]!.msg);
      assert.equal(all[i]!.fields.BARRIER, undefined, all[i]!.msg);
      assert.equal(all[i + 1]?.msg, 'BARRIER=1', `message ${i} is followed by a barrier`);
      assert.equal(all[i + 1]?.fds, 1, 'the barrier carries one pipe');
    }
    assert.equal(sidecar.stdout().includes('systemd-notify failed'), false, sidecar.stdout());
  });

  it('runs without NOTIFY_SOCKET exactly as before: no systemd-notify at all', async (t) => {
    const tls = await testTls();
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const dir = mkdtempSync(join(tmpdir(), 'b2b-notify-off-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const config = join(dir, 'sidecar.yaml');
    writeFileSync(config, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${sim.baseUrl}", caFile: "${tls.caFile}" }`,
      `credentials: { apiKey: "${CREDENTIALS.apiKey}", password: "${CREDENTIALS.password}" }`,
      '',
    ].join('\n'));
    // A PATH whose systemd-notify would fail loudly: it must never be run.
    writeFileSync(join(dir, 'systemd-notify'), '#!/bin/sh\necho ran >> "$0.log"\nexit 1\n', { mode: 0o755 });
    const sidecar = spawnCli(['run', '--config', config], { PATH: `${dir}:${process.env.PATH}`, WATCHDOG_USEC: '1000000' });
    t.after(async () => {
      sidecar.child.kill('SIGKILL');
      await sidecar.exited;
    });
    await sidecar.waitFor(/"message":"token obtained"/);
    await new Promise((r) => setTimeout(r, 1200));
    sidecar.child.kill('SIGTERM');
    assert.equal(await sidecar.exited, 0, sidecar.stderr());
    assert.equal(sidecar.stdout().includes('systemd-notify'), false);
    assert.throws(() => rmSync(join(dir, 'systemd-notify.log')), /ENOENT/, 'systemd-notify was run');
  });
});
