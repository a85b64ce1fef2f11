import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CLI, runCli, spawnCli, staleBuild } from '../helpers/cli.js';
import { CREDENTIALS, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

const sh = promisify(execFile);

async function configFor(baseUrl: string, extra = ''): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'b2b-cli-'));
  const file = join(dir, 'sidecar.yaml');
  writeFileSync(file, [
    'listen: { host: 127.0.0.1, port: 0 }',
    extra.startsWith('admin:') ? '' : 'admin: { host: 127.0.0.1, port: 0 }',
    `service: { baseUrl: "${baseUrl}", caFile: "${(await testTls()).caFile}" }`,
    `credentials: { apiKey: "${CREDENTIALS.apiKey}", password: "${CREDENTIALS.password}", rkObjectId: "${CREDENTIALS.rkObjectId}" }`,
    extra,
  ].join('\n'));
  return file;
}

describe('command line', () => {
  it('--help lists every command', async () => {
    const { code, stdout } = await runCli(['--help']);
    assert.equal(code, 0);
    for (const cmd of ['run', 'demo', 'simulate', 'token', 'check-config', 'translation']) assert.match(stdout, new RegExp(`\\b${cmd}\\b`));
  });

  it('--version prints the package version', async () => {
    const { code, stdout } = await runCli(['--version']);
    assert.equal(code, 0);
    assert.match(stdout, /^\d+\.\d+\.\d+\n$/);
  });

  it('tunes V8 for serving (Liftoff-only wasm, old-space growth) only after the built-in modules are loaded', async () => {
    // Records the flags the CLI gives V8, and whether node:tls was already loaded at that point:
    // any flag change makes Node reject its built-in code cache for modules loaded afterwards.
    const dir = mkdtempSync(join(tmpdir(), 'b2b-cli-'));
    const preload = join(dir, 'record-v8-flags.cjs');
    writeFileSync(preload, `
      const v8 = require('node:v8');
      const set = v8.setFlagsFromString;
      v8.setFlagsFromString = (flags) => {
        process.stderr.write('v8 flags: ' + flags + ' (tls loaded: ' + process.moduleLoadList.includes('NativeModule tls') + ')\\n');
        set(flags);
      };
      require('node:module').syncBuiltinESMExports();`);
    const version = await sh(process.execPath, ['--require', preload, CLI, '--version']);
    assert.doesNotMatch(version.stderr, /v8 flags/, 'short commands leave V8 alone');
    const run = await sh(process.execPath, ['--require', preload, CLI, 'run', '--config', join(dir, 'missing.yaml')]).then(
      () => assert.fail('run with a missing config file must fail'),
      (err: { code: number; stderr: string }) => err,
    );
    assert.equal(run.code, 2);
    assert.match(run.stderr, /^v8 flags: --liftoff-only \(tls loaded: true\)$/m);
    assert.match(run.stderr, /^v8 flags: --no-wasm-dynamic-tiering \(tls loaded: true\)$/m);
    assert.match(run.stderr, /^v8 flags: --no-wasm-tier-up \(tls loaded: true\)$/m);
    assert.match(run.stderr, /^v8 flags: --heap-growing-percent=20 \(tls loaded: true\)$/m);
  });

  it('exits 2 on an unknown command or option', async () => {
    assert.equal((await runCli(['frobnicate'])).code, 2);
    assert.equal((await runCli(['run', '--bogus'])).code, 2);
  });

  it('run exits 2 listing every configuration problem by key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-cli-'));
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'service: { baseUrl: "http://api.example.com" }\nlisten: { port: 70000 }\nguard: { allow: ["10.1/16"] }\n');
    const { code, stderr } = await runCli(['run', '--config', file]);
    assert.equal(code, 2);
    assert.match(stderr, /service\.baseUrl/);
    assert.match(stderr, /listen\.port/);
    assert.match(stderr, /guard\.allow\[0\]/);
    assert.match(stderr, /credentials/);
  });

  it('token prints a token, --json the whole AuthResult, and exits 1 with the server message on 401', async () => {
    const sim = await startSimulator();
    try {
      const file = await configFor(sim.baseUrl);
      const plain = await runCli(['token', '--config', file]);
      assert.equal(plain.code, 0, plain.stderr);
      assert.match(plain.stdout, /^[A-Za-z0-9_-]{20,}\n$/);
      const json = await runCli(['token', '--config', file, '--json']);
      const result = JSON.parse(json.stdout) as Record<string, unknown>;
      assert.deepEqual(Object.keys(result).sort(), ['aliveSecondsTtl', 'refreshToken', 'token']);
      const rejected = await runCli(['token', '--config', file], { B2B_PASSWORD: 'wrong-password-123' });
      assert.equal(rejected.code, 1);
      assert.match(rejected.stderr, /401/);
      assert.equal(rejected.stderr.includes('wrong-password-123'), false);
    } finally {
      await sim.stop();
    }
  });

  it('run drains on SIGTERM: readiness drops, the in-flight request completes, exit 0', async () => {
    const sim = await startSimulator();
    try {
      const file = await configFor(sim.baseUrl, 'shutdown: { delaySeconds: 0.3, timeoutSeconds: 10 }');
      const p = spawnCli(['run', '--config', file]);
      const started = await p.waitFor(/"listen":"127\.0\.0\.1:(\d+)","admin":"127\.0\.0\.1:(\d+)"/);
      const [port, adminPort] = [started[1], started[2]];
      await p.waitFor(/token obtained/);
      const slow = fetch(`http://127.0.0.1:${port}/pub/b2b/v1/slow?ms=1200`);
      await new Promise((r) => setTimeout(r, 200));
      p.child.kill('SIGTERM');
      await p.waitFor(/draining/);
      const ready = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
      assert.equal(ready.status, 503);
      const answer = await slow;
      assert.equal(answer.status, 200);
      assert.equal(await p.exited, 0);
      for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password]) assert.equal(p.stdout().includes(secret), false);
    } finally {
      await sim.stop();
    }
  });

  it('run keeps serving when the reader of its log goes away (EPIPE on stdout), and still drains to exit 0', async () => {
    const sim = await startSimulator();
    try {
      const file = await configFor(sim.baseUrl, 'log: { requests: true }');
      const p = spawnCli(['run', '--config', file]);
      const started = await p.waitFor(/"listen":"127\.0\.0\.1:(\d+)","admin":"127\.0\.0\.1:(\d+)"/);
      const [port, adminPort] = [started[1], started[2]];
      await p.waitFor(/token obtained/);
      // The log collector dies: the read end of the sidecar's stdout pipe closes.
      p.child.stdout.destroy();
      // Each request logs a line (log.requests), the first of them into the closed pipe.
      for (let i = 0; i < 3; i++) {
        const answer = await fetch(`http://127.0.0.1:${port}/pub/b2b/v1/objects/${CREDENTIALS.rkObjectId}`).catch((err: Error) => {
          throw new Error(`the sidecar stopped serving: ${err.message}; stderr: ${p.stderr()}`);
        });
        assert.equal(answer.status, 200);
        await answer.arrayBuffer();
      }
      assert.equal((await fetch(`http://127.0.0.1:${adminPort}/readyz`)).status, 200);
      p.child.kill('SIGTERM');
      assert.equal(await p.exited, 0, p.stderr());
      // Said once, however many lines were lost after it.
      assert.equal(p.stderr().match(/^warning: stdout failed \(EPIPE\); its output stops, the process goes on$/gm)?.length, 1, p.stderr());
      assert.doesNotMatch(p.stderr(), /Unhandled 'error' event/);
    } finally {
      await sim.stop();
    }
  });

  it('a second signal exits at once instead of waiting for the drain', async () => {
    const sim = await startSimulator();
    try {
      const file = await configFor(sim.baseUrl, 'shutdown: { delaySeconds: 30, timeoutSeconds: 30 }');
      const p = spawnCli(['run', '--config', file]);
      await p.waitFor(/token obtained/);
      p.child.kill('SIGTERM');
      await p.waitFor(/draining/);
      p.child.kill('SIGINT');
      assert.equal(await p.exited, 130);
    } finally {
      await sim.stop();
    }
  });

  it('POST /shutdown on the admin listener drains and exits 0 when admin.allowShutdown is true', async () => {
    const sim = await startSimulator();
    try {
      const file = await configFor(sim.baseUrl, 'admin: { host: 127.0.0.1, port: 0, allowShutdown: true }');
      const p = spawnCli(['run', '--config', file]);
      const started = await p.waitFor(/"admin":"127\.0\.0\.1:(\d+)"/);
      await p.waitFor(/token obtained/);
      const res = await fetch(`http://127.0.0.1:${started[1]}/shutdown`, { method: 'POST' });
      assert.equal(res.status, 202);
      assert.equal(await p.exited, 0);
    } finally {
      await sim.stop();
    }
  });

  it('demo prints curl lines that work exactly as printed', async () => {
    const p = spawnCli(['demo']);
    try {
      await p.waitFor(/translation demo\/web\/en --config \S+/);
      assert.match(p.stdout(), /^node \/\S+\/dist\/cli\.js translation /m, 'an absolute path, so it works from any directory');
      const lines = p.stdout().split('\n').filter((l) => l.startsWith('curl '));
      assert.ok(lines.length >= 3, p.stdout());
      for (const line of lines) {
        const { stdout } = await sh('sh', ['-c', `${line} -w '\\n%{http_code}'`]);
        assert.match(stdout, /\n200$/, `${line} → ${stdout.slice(-200)}`);
      }
      const translation = p.stdout().match(/^node \S+cli\.js (translation .+)$/m)![1]!.split(' ');
      const summary = await runCli(translation);
      assert.equal(summary.code, 0, summary.stderr);
      assert.match(summary.stdout, /translated/i);
    } finally {
      p.child.kill('SIGINT');
      assert.equal(await p.exited, 0);
    }
  });
});

describe('e2e helpers and a stale build', () => {
  it('name a dist/ older than src/ (or missing) instead of testing the previous build', () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-stale-'));
    const src = join(dir, 'src');
    mkdirSync(join(src, 'token'), { recursive: true });
    const cli = join(dir, 'cli.js');
    assert.match(staleBuild(cli, src) ?? '', /does not exist: run npm run build/);
    writeFileSync(join(src, 'token', 'a.ts'), 'old');
    writeFileSync(cli, 'built');
    utimesSync(join(src, 'token', 'a.ts'), new Date(1_000_000), new Date(1_000_000));
    assert.equal(staleBuild(cli, src), undefined);
    utimesSync(join(src, 'token', 'a.ts'), new Date(), new Date(Date.now() + 60_000));
    assert.match(staleBuild(cli, src) ?? '', /dist\/ is older than src\/: run npm run build/);
  });
});

describe('wait through the built CLI', () => {
  it('is listed in --help and exits 2 for a bad --admin', async () => {
    assert.match((await runCli(['--help'])).stdout, /^\s+wait \[options\]/m);
    const bad = await runCli(['wait', '--admin', 'ftp://x']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--admin must be the admin listener's http:\/\/ URL/);
  });
});
