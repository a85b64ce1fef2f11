import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { assertBuildIsCurrent, CLI } from '../helpers/cli.js';
import { CREDENTIALS } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * Whole processes, each with one start step made to fail: by a real condition where one exists
 * (a port taken, a file where the socket goes, a group the user is not in) and otherwise by the
 * preload test/helpers/fail-open.mjs, which makes one file's open fail (or hang) inside the
 * process without any hook in the sidecar. Every run must end on its own, quickly, with the exit
 * code and a message naming what failed, and leave no socket file behind.
 */
const PRELOAD = fileURLToPath(new URL('../helpers/fail-open.mjs', import.meta.url));
/** Generous for a loaded machine; a process that hangs never gets there. */
const DEADLINE_MS = 10_000;

interface Outcome { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number }

function runSidecar(config: string, options: { env?: Record<string, string>; asNobody?: boolean; signalsAfterStart?: boolean } = {}): Promise<Outcome> {
  assertBuildIsCurrent();
  const node = [process.execPath, '--import', PRELOAD, CLI, 'run', '--config', config];
  // We run as root in CI: setpriv drops to an unprivileged user with no supplementary groups.
  const [file, ...args] = options.asNobody ? ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', ...node] : node;
  const began = performance.now();
  const child = spawn(file!, args, { env: { PATH: process.env.PATH, ...options.env } });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const kill = setTimeout(() => child.kill('SIGKILL'), DEADLINE_MS * 3);
  if (options.signalsAfterStart) {
    // Two SIGTERMs once the process is stuck in start-up (the preload says so): the second must end it at once.
    const poll = setInterval(() => {
      if (stderr.includes('fail-open: hanging the open')) {
        clearInterval(poll);
        child.kill('SIGTERM');
        // The first is handled (a log line) before the second is sent.
        const second = setInterval(() => {
          if (!stdout.includes('"signal received: draining"')) return;
          clearInterval(second);
          child.kill('SIGTERM');
        }, 20);
        child.once('close', () => clearInterval(second));
      }
    }, 20);
    child.once('close', () => clearInterval(poll));
  }
  return new Promise((resolve) => child.once('close', (code, signal) => {
    clearTimeout(kill);
    resolve({ code, signal, stdout, stderr, ms: performance.now() - began });
  }));
}

async function fixture() {
  const dir = mkdtempSync(join(tmpdir(), 'b2b-start-fail-'));
  chmodSync(dir, 0o1777); // the unprivileged run must create its socket here (sticky, as /tmp: a world-writable directory without it is refused)
  const tls = await testTls();
  const ca = join(dir, 'ca.pem');
  copyFileSync(tls.caFile, ca);
  const apiKeyFile = join(dir, 'api-key');
  writeFileSync(apiKeyFile, `${CREDENTIALS.apiKey}\n`, { mode: 0o600 });
  let n = 0;
  const write = (lines: string[]) => {
    const file = join(dir, `sidecar-${++n}.yaml`);
    writeFileSync(file, [
      ...(lines.some((l) => l.startsWith('admin:')) ? [] : ['admin: { host: 127.0.0.1, port: 0 }']),
      ...(lines.some((l) => l.startsWith('listen:')) ? [] : ['listen: { host: 127.0.0.1, port: 0 }']),
      'service: { baseUrl: "https://127.0.0.1:1", caFile: "' + ca + '" }',
      `credentials: { apiKeyFile: "${apiKeyFile}", password: "${CREDENTIALS.password}" }`,
      ...lines, '',
    ].join('\n'), { mode: 0o644 });
    return file;
  };
  return { dir, ca, apiKeyFile, write };
}

function takenPort(): Promise<{ port: number; server: Server }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => resolve({ port: (server.address() as { port: number }).port, server }));
  });
}

function assertEndedQuickly(outcome: Outcome, code: number, message: RegExp): void {
  assert.equal(outcome.signal, null, `killed instead of ending on its own; stdout: ${outcome.stdout}`);
  assert.equal(outcome.code, code, `stderr: ${outcome.stderr}\nstdout: ${outcome.stdout}`);
  assert.match(outcome.stderr, message);
  assert.ok(outcome.ms < DEADLINE_MS, `took ${Math.round(outcome.ms)} ms`);
}

describe('a start that fails at any step ends the process on its own', () => {
  it('the admin listener: its port taken exits 1 naming admin.port', async (t) => {
    const f = await fixture();
    const taken = await takenPort();
    t.after(() => taken.server.close());
    const outcome = await runSidecar(f.write([`admin: { host: 127.0.0.1, port: ${taken.port} }`]));
    assertEndedQuickly(outcome, 1, /^error: admin\.port \(B2B_ADMIN_PORT\): the admin listener cannot listen .*\[EADDRINUSE\]/m);
  });

  it('the proxy listener: its port taken exits 1 naming listen.port', async (t) => {
    const f = await fixture();
    const taken = await takenPort();
    t.after(() => taken.server.close());
    const outcome = await runSidecar(f.write([`listen: { host: 127.0.0.1, port: ${taken.port} }`]));
    assertEndedQuickly(outcome, 1, /^error: listen\.port \(B2B_LISTEN_PORT\): the proxy listener cannot listen .*\[EADDRINUSE\]/m);
  });

  it('the unix socket: a regular file in its place exits 1 and the file is left alone', async () => {
    const f = await fixture();
    const path = join(f.dir, 'not-a-socket');
    writeFileSync(path, 'keep me');
    const outcome = await runSidecar(f.write([`listen: { host: 127.0.0.1, port: 0, socket: "${path}" }`]));
    assertEndedQuickly(outcome, 1, /^error: listen\.socket \(B2B_LISTEN_SOCKET\): .* exists and is not a socket/m);
    assert.equal(readFileSync(path, 'utf8'), 'keep me');
  });

  it('the unix socket group: a group the unprivileged user is not in exits 1 within 10 s and leaves no socket file', async () => {
    // As root (CI), setpriv drops to nobody; a developer's own user is unprivileged already.
    const asNobody = process.getuid?.() === 0;
    const f = await fixture();
    const path = join(f.dir, 'sidecar.sock');
    // Readable by nobody: the unprivileged process reads its config and key file.
    chmodSync(f.apiKeyFile, 0o644);
    const outcome = await runSidecar(f.write([`listen: { host: 127.0.0.1, port: 0, socket: "${path}", socketGroup: root }`]), { asNobody });
    assertEndedQuickly(outcome, 1, /^error: listen\.socket \(B2B_LISTEN_SOCKET\): .*its group cannot be set \(the user running the sidecar must be a member of listen\.socketGroup\) \[EPERM\]/m);
    assert.equal(existsSync(path), false, 'the socket file was left behind');
    assert.match(outcome.stdout, /"message":"sidecar stopped"/);
  });

  it('TLS material: the CA file failing at start-up exits 1 naming the file', async () => {
    const f = await fixture();
    // The first open is the configuration check's; the second, start-up's, fails.
    const outcome = await runSidecar(f.write([]), { env: { TEST_FAIL_OPEN: f.ca, TEST_FAIL_OPEN_AFTER: '1' } });
    assertEndedQuickly(outcome, 1, new RegExp(`^error: the sidecar could not start: ${f.ca.replace(/[.]/g, '\\.')} cannot be read \\(EIO\\)`, 'm'));
  });

  it('the token loop\'s credentials: a key file failing at start-up exits 2 naming the key, as check-config would', async () => {
    const f = await fixture();
    const outcome = await runSidecar(f.write([]), { env: { TEST_FAIL_OPEN: f.apiKeyFile, TEST_FAIL_OPEN_AFTER: '1' } });
    assertEndedQuickly(outcome, 2, /credentials\.apiKeyFile \(B2B_API_KEY_FILE\): .* cannot be read \(EIO\)/);
  });

  it('a second signal ends a start-up stuck on a hung file at once (exit 130)', async () => {
    const f = await fixture();
    const outcome = await runSidecar(f.write([]), { env: { TEST_FAIL_OPEN: f.apiKeyFile, TEST_FAIL_OPEN_AFTER: '1', TEST_FAIL_OPEN_HANG: '1' }, signalsAfterStart: true });
    assert.equal(outcome.signal, null, 'only SIGKILL ended it');
    assert.equal(outcome.code, 130, outcome.stdout);
    assert.match(outcome.stdout, /"second signal: exiting without waiting"/);
    assert.ok(outcome.ms < DEADLINE_MS, `took ${Math.round(outcome.ms)} ms`);
    assert.doesNotMatch(outcome.stdout, /"sidecar started"/);
  });
});
