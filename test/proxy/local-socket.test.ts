import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { describe, it } from 'node:test';
import { createListener } from '../../src/proxy/listener/listener.js';
import { socketDirectoryProblem } from '../../src/config/socket-directory.js';
import { validateConfig } from '../../src/config/validate-config.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';

const LIMITS = { requestTimeoutMs: 10_000, headersTimeoutMs: 5_000, maxHeaderBytes: 16 * 1024, maxConnections: 16 };
/** A group the socket is given that differs from the files' own (root can give any gid). */
const OTHER_GID = 65534;
const isRoot = process.geteuid?.() === 0;

function scratch(t: { after: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'b2b-sock-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('the unix socket is created safe (local-socket.ts createSocketFile)', () => {
  it('a symlink swapped in at the socket path while it is being created leaves the target\'s mode and group untouched', async (t) => {
    const dir = scratch(t);
    const path = join(dir, 'sidecar.sock');
    // A root-only file the attacker wants opened to their group.
    const target = join(dir, 'root-only');
    writeFileSync(target, 'secret', { mode: 0o600 });
    chmodSync(target, 0o600);
    const before = statSync(target);
    const listener = createListener((_req, res) => res.end(), LIMITS, createCaptureLogger().logger, { local: true });
    t.after(() => listener.close());
    // The attacker's move, at the moment the socket is bound: the path now names their symlink.
    listener.server.once('listening', () => {
      rmSync(path, { force: true });
      symlinkSync(target, path);
    });
    await assert.rejects(listener.listenPath(path, 0o666, isRoot ? OTHER_GID : undefined), /appeared while the socket was being created: not replaced/);
    const after = statSync(target);
    assert.equal(after.mode & 0o7777, 0o600, 'the target\'s mode is untouched');
    assert.equal(after.gid, before.gid, 'the target\'s group is untouched');
    assert.equal(readlinkSync(path), target, 'the attacker\'s symlink is neither followed nor replaced');
    assert.deepEqual(readdirSync(dir).sort(), ['root-only', 'sidecar.sock'], 'the private directory is gone');
    await listener.close();
    assert.equal(readlinkSync(path), target, 'closing removes only a socket it made, not what is at the path');
  });

  it('the private directory stays while listening, so no symlink can take its name before the server\'s close unlinks the socket in it', async (t) => {
    const dir = scratch(t);
    chmodSync(dir, 0o1777); // sticky, like /tmp: nobody else may remove or rename the directory
    const path = join(dir, 'sidecar.sock');
    // The attacker's target: a directory holding a file named like the bound socket.
    const victim = join(dir, 'victim');
    mkdirSync(victim);
    writeFileSync(join(victim, 's'), 'keep me');
    const listener = createListener((_req, res) => res.end(), LIMITS, createCaptureLogger().logger, { local: true });
    t.after(() => listener.close());
    let bound = '';
    listener.server.once('listening', () => (bound = listener.server.address() as string));
    await listener.listenPath(path, 0o660);
    const privateDir = dirname(bound);
    assert.equal(basename(bound), 's');
    assert.match(basename(privateDir), /^\.b2b-/);
    const stat = lstatSync(privateDir);
    assert.ok(stat.isDirectory(), 'the private directory exists while listening');
    assert.equal(stat.mode & 0o777, 0o700);
    // The attacker's move while the sidecar runs: a symlink at the private directory's name. It
    // can only fail while the directory is there (were it gone, close would delete victim/s).
    let planted = true;
    try {
      symlinkSync(victim, privateDir);
    } catch (err) {
      assert.equal((err as NodeJS.ErrnoException).code, 'EEXIST');
      planted = false;
    }
    assert.equal(planted, false, 'a symlink took the private directory\'s name');
    await listener.close();
    assert.equal(readFileSync(join(victim, 's'), 'utf8'), 'keep me', 'nothing in the symlink\'s target is deleted');
    assert.equal(lstatSync(privateDir, { throwIfNoEntry: false }), undefined, 'the private directory is removed after close');
    assert.deepEqual(readdirSync(dir), ['victim'], 'the socket and the private directory are gone');
  });

  it('the socket appears at its path with its mode and group already set, and the private directory is removed', async (t) => {
    const dir = scratch(t);
    const path = join(dir, 'sidecar.sock');
    const listener = createListener((_req, res) => res.end('ok'), LIMITS, createCaptureLogger().logger, { local: true });
    t.after(() => listener.close());
    const seen: Array<number | undefined> = [];
    // While it is bound, nothing exists at the final path yet.
    listener.server.once('listening', () => seen.push(lstatSync(path, { throwIfNoEntry: false })?.mode));
    await listener.listenPath(path, 0o660, isRoot ? OTHER_GID : undefined);
    assert.deepEqual(seen, [undefined]);
    const stat = lstatSync(path);
    assert.ok(stat.isSocket());
    assert.equal(stat.mode & 0o777, 0o660);
    if (isRoot) assert.equal(stat.gid, OTHER_GID);
    assert.deepEqual(readdirSync(dir).filter((name) => !name.startsWith('.b2b-')), ['sidecar.sock']);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(path);
      let text = '';
      socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
      socket.end('GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    });
    assert.match(answer, /^HTTP\/1\.1 200 /);
    await listener.close();
    assert.deepEqual(readdirSync(dir), [], 'closing removes the socket it made');
  });

  it('a directory other users can write is refused unless it is sticky and owned by the sidecar\'s user or root', () => {
    const me = 1000;
    const cases: Array<[string, { uid: number; mode: number }, RegExp | undefined]> = [
      ['own 0750', { uid: me, mode: 0o40750 }, undefined],
      ['root 0755', { uid: 0, mode: 0o40755 }, undefined],
      ['root 1777 (/tmp)', { uid: 0, mode: 0o41777 }, undefined],
      ['own 1770', { uid: me, mode: 0o41770 }, undefined],
      ['own 0777', { uid: me, mode: 0o40777 }, /writable by other users \(mode 0777\) without the sticky bit/],
      ['own 0770', { uid: me, mode: 0o40770 }, /writable by other users \(mode 0770\)/],
      ['root 2777 (a Kubernetes emptyDir with fsGroup)', { uid: 0, mode: 0o42777 }, /writable by other users \(mode 2777\)/],
      ['another user 1777', { uid: 1001, mode: 0o41777 }, /belongs to another user \(uid 1001\)/],
      ['another user 0700', { uid: 1001, mode: 0o40700 }, /belongs to another user/],
    ];
    for (const [name, stat, expected] of cases) {
      const problem = socketDirectoryProblem(stat, me);
      if (expected) assert.match(problem ?? '', expected, name);
      else assert.equal(problem, undefined, name);
    }
  });

  it('a socket path too long for the private directory next to it is refused by the config check', (t) => {
    const dir = scratch(t);
    const deep = join(dir, 'd'.repeat(Math.max(1, 100 - dir.length)));
    mkdirSync(deep);
    const config = (socket: string) => () => validateConfig({ listen: { socket }, service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'k-123456', password: 'p-123456' } });
    assert.throws(config(join(deep, 's.sock')), /listen\.socket \(B2B_LISTEN_SOCKET\): is too long for a unix socket: its directory may have at most 93 bytes/);
    assert.doesNotThrow(config(join(dir, 's.sock')));
  });
});
