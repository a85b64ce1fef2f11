import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { spawnCli, spawnCommand, type Spawned } from '../helpers/cli.js';
import { CREDENTIALS, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * Signals a sidecar may get at any time (docs/security.md, "The process"): SIGUSR1 must never
 * open Node's inspector (an unauthenticated debugger on 127.0.0.1:9229 that reads the password),
 * and a SIGHUP during start-up must not end the process (exit 129, which systemd does not
 * restart). Each start path CI can run: the CLI (`node dist/cli.js`), the release archive's
 * launcher (scripts/release/launcher.sh, what /usr/bin/b2b-sidecar of the .deb is), and the
 * .deb's unit command line (that launcher with the unit's NODE_OPTIONS).
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const INSPECTOR_PORT = 9229;
const work = mkdtempSync(join(tmpdir(), 'b2b-signals-'));

/** The archive's layout around its launcher: bin/b2b-sidecar, node/bin/node, dist/, package.json. */
function archiveLauncher(): string {
  const root = join(work, 'b2b-sidecar');
  mkdirSync(join(root, 'bin'), { recursive: true });
  mkdirSync(join(root, 'node/bin'), { recursive: true });
  copyFileSync(join(ROOT, 'scripts/release/launcher.sh'), join(root, 'bin/b2b-sidecar'));
  chmodSync(join(root, 'bin/b2b-sidecar'), 0o755);
  symlinkSync(process.execPath, join(root, 'node/bin/node'));
  symlinkSync(join(ROOT, 'dist'), join(root, 'dist'));
  symlinkSync(join(ROOT, 'package.json'), join(root, 'package.json'));
  return join(root, 'bin/b2b-sidecar');
}

/** NODE_OPTIONS as the shipped unit sets them (the .deb ships that unit). */
function unitNodeOptions(): string {
  const unit = readFileSync(join(ROOT, 'deploy/systemd/b2b-sidecar.service'), 'utf8');
  const m = /^Environment="?NODE_OPTIONS=([^"\n]*)"?$/m.exec(unit);
  assert.ok(m, 'the unit sets NODE_OPTIONS');
  return m[1]!.trim();
}

/**
 * A module node loads before dist/cli.js (`--require`) that sends the process `signal` once
 * JavaScript runs: at the first turn of the event loop (before the config is even read), or after
 * `delayMs`. Deterministic where a delay after spawn is not: Node's own bootstrap, before any
 * JavaScript, resets every signal to its default and cannot be guarded (docs/security.md).
 */
function earlySignal(signal: 'SIGHUP' | 'SIGUSR1', delayMs?: number): string {
  const file = join(work, `early-${signal}-${delayMs ?? 'now'}.cjs`);
  const send = `() => process.kill(process.pid, '${signal}')`;
  writeFileSync(file, delayMs === undefined ? `setImmediate(${send});\n` : `setTimeout(${send}, ${delayMs});\n`);
  return file;
}

function inspectorOpen(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(INSPECTOR_PORT, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function start(path: 'cli' | 'launcher' | 'unit', config: string, env: NodeJS.ProcessEnv = {}): Spawned {
  if (path === 'cli') return spawnCli(['run', '--config', config], env);
  const launcher = launcherPath ??= archiveLauncher();
  return spawnCommand(launcher, ['run', '--config', config],
    path === 'unit' ? { NODE_OPTIONS: `${unitNodeOptions()} ${env.NODE_OPTIONS ?? ''}`.trim() } : env);
}
let launcherPath: string | undefined;

describe('signals: SIGUSR1 never opens the inspector, a SIGHUP during start-up never ends the sidecar', { timeout: 120_000 }, () => {
  let config: string;
  let stopSim: () => Promise<void>;

  before(async () => {
    const tls = await testTls();
    const sim = await startSimulator();
    stopSim = () => sim.stop();
    config = join(work, 'sidecar.yaml');
    writeFileSync(config, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${sim.baseUrl}", caFile: "${tls.caFile}" }`,
      `credentials: { apiKey: "${CREDENTIALS.apiKey}", password: "${CREDENTIALS.password}", rkObjectId: obj-42 }`,
      'shutdown: { delaySeconds: 0, timeoutSeconds: 5 }',
      '',
    ].join('\n'), { mode: 0o600 });
  });
  after(() => stopSim());

  it('the check itself: a plain node process opens the inspector on SIGUSR1', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 10000)']);
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    await new Promise((r) => setTimeout(r, 300));
    child.kill('SIGUSR1');
    const deadline = Date.now() + 5000;
    while (!/Debugger listening/.test(err) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.match(err, /Debugger listening on ws:\/\/127\.0\.0\.1:9229/);
    assert.equal(await inspectorOpen(), true);
    child.kill('SIGKILL');
    await new Promise((r) => child.once('close', r));
  });

  for (const path of ['cli', 'launcher', 'unit'] as const) {
    it(`${path}: SIGUSR1 to the running sidecar is logged and ignored; no inspector port opens`, async () => {
      const run = start(path, config);
      try {
        await run.waitFor(/"message":"sidecar started"/);
        run.child.kill('SIGUSR1');
        // Under --disable-sigusr1 (the launcher, the unit) Node drops the signal before any listener.
        if (path === 'cli') await run.waitFor(/"message":"SIGUSR1 ignored: it would open Node's inspector/);
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(run.child.exitCode, null, 'still serving');
        assert.equal(await inspectorOpen(), false, 'nothing listens on 127.0.0.1:9229');
        assert.doesNotMatch(run.stderr(), /Debugger listening/);
        run.child.kill('SIGTERM');
        assert.equal(await run.exited, 0, run.stderr());
      } finally {
        run.child.kill('SIGKILL');
      }
    });

    for (const delay of [undefined, 10] as const) {
      const when = delay === undefined ? 'at the first turn of the event loop' : `${delay} ms after JavaScript starts`;
      it(`${path}: a SIGHUP ${when} (before the config is read) is ignored: the sidecar starts and stops cleanly`, async () => {
        const run = start(path, config, { NODE_OPTIONS: `--require=${earlySignal('SIGHUP', delay)}` });
        try {
          await run.waitFor(/"message":"sidecar started"/);
          run.child.kill('SIGTERM');
          assert.equal(await run.exited, 0, run.stderr());
        } finally {
          run.child.kill('SIGKILL');
        }
      });
    }

    it(`${path}: a SIGUSR1 at the first turn of the event loop opens no inspector either`, async () => {
      const run = start(path, config, { NODE_OPTIONS: `--require=${earlySignal('SIGUSR1')}` });
      try {
        await run.waitFor(/"message":"sidecar started"/);
        assert.equal(await inspectorOpen(), false);
        assert.doesNotMatch(run.stderr(), /Debugger listening/);
        run.child.kill('SIGTERM');
        assert.equal(await run.exited, 0, run.stderr());
      } finally {
        run.child.kill('SIGKILL');
      }
    });
  }

  it('run refuses an inspector in NODE_OPTIONS (exit 2, naming it) unless B2B_ALLOW_INSPECTOR=true', async () => {
    const refused = spawnCli(['run', '--config', config], { NODE_OPTIONS: '--inspect=127.0.0.1:0' });
    assert.equal(await refused.exited, 2);
    assert.match(refused.stderr(), /error: Node's inspector is enabled \(--inspect=127\.0\.0\.1:0\): anyone who can reach its port can read the credentials/);
    const allowed = spawnCli(['run', '--config', config], { NODE_OPTIONS: '--inspect=127.0.0.1:0', B2B_ALLOW_INSPECTOR: 'true' });
    try {
      const line = await allowed.waitFor(/^.*Node's inspector is enabled.*$/m);
      assert.match(line[0], /"level":"warn"/);
      assert.doesNotMatch(allowed.stdout(), /is not a setting/, 'B2B_ALLOW_INSPECTOR is a known variable');
    } finally {
      allowed.child.kill('SIGKILL');
    }
  });

  it('NODE_DEBUG=http is warned about at start, naming the risk', async () => {
    const run = spawnCli(['run', '--config', config], { NODE_DEBUG: 'http' });
    try {
      const line = await run.waitFor(/^.*NODE_DEBUG=http makes Node print request headers.*$/m);
      assert.match(line[0], /"level":"warn"/);
    } finally {
      run.child.kill('SIGKILL');
    }
  });
});
