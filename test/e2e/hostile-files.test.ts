import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createLocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { spawnCli } from '../helpers/cli.js';
import { CREDENTIALS, send, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

const L10N_TOKEN = 'wlu_hostile7oken1a2b3c4d';

/** Swaps `path` for what `make` creates next to it, atomically, as secret managers do. */
function swap(path: string, make: (tmp: string) => void): void {
  const tmp = `${path}.new`;
  make(tmp);
  renameSync(tmp, path);
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) / 1024;
}

/** Answers within 2 s or not at all: a frozen event loop fails here instead of hanging the test. */
async function within2s(port: number, path: string): Promise<number> {
  const timeout = new Promise<number>((r) => setTimeout(() => r(0), 2000).unref());
  return Promise.race([send(port, { path }).then((a) => a.status, () => -1), timeout]);
}

describe('credential and token files replaced by hostile ones while `run` is up', () => {
  it('lives, keeps serving with the current values, names the key and why, and prints no secret', async (t) => {
    const tls = await testTls();
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const l10n = createLocalizationSimulator({ tls, token: L10N_TOKEN });
    const { url: l10nUrl } = await l10n.start();
    t.after(() => l10n.stop());
    const dir = mkdtempSync(join(tmpdir(), 'b2b-hostile-'));
    const apiKeyFile = join(dir, 'api-key');
    const passwordFile = join(dir, 'password');
    const tokenFile = join(dir, 'l10n-token');
    writeFileSync(apiKeyFile, CREDENTIALS.apiKey);
    writeFileSync(passwordFile, CREDENTIALS.password);
    writeFileSync(tokenFile, L10N_TOKEN);
    const config = join(dir, 'sidecar.yaml');
    writeFileSync(config, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${sim.baseUrl}", caFile: "${tls.caFile}" }`,
      `credentials: { apiKeyFile: "${apiKeyFile}", passwordFile: "${passwordFile}" }`,
      `localization: { baseUrl: "${l10nUrl}", caFile: "${tls.caFile}", tokenFile: "${tokenFile}" }`,
      '',
    ].join('\n'));
    const run = spawnCli(['run', '--config', config]);
    t.after(async () => {
      run.child.kill('SIGKILL');
      await run.exited;
    });
    const [, port, adminPort] = (await run.waitFor(/"listen":"127\.0\.0\.1:(\d+)","admin":"127\.0\.0\.1:(\d+)"/)).map(Number) as [number, number, number];
    await run.waitFor(/"message":"token obtained"/);
    const pid = run.child.pid!;
    const serving = async (what: string) => {
      assert.equal(await within2s(adminPort, '/healthz'), 200, `/healthz after ${what}`);
      assert.equal(await within2s(port, '/pub/b2b/v1/objects/obj-42'), 200, `a proxied request after ${what}`);
      assert.equal(await within2s(port, '/l10n/api/translations/demo/web/en/'), 200, `the localization route after ${what}`);
    };
    const reloadAndWait = async (pattern: RegExp, what: string) => {
      const before = run.stdout().length;
      run.child.kill('SIGHUP');
      for (let i = 0; i < 200 && !pattern.test(run.stdout().slice(before)); i++) await new Promise((r) => setTimeout(r, 25));
      assert.match(run.stdout().slice(before), pattern, what);
      await serving(what);
    };

    // 8 KiB of NUL bytes: the old build registered it, built one giant pattern, crashed and printed every secret.
    swap(passwordFile, (tmp) => writeFileSync(tmp, Buffer.alloc(8192)));
    await reloadAndWait(/credentials\.passwordFile \(B2B_PASSWORD_FILE\): \S+ is larger than 4096 bytes/, 'a NUL password file');
    // A 20 MB valid-looking password and a 40 KB one-character localization token.
    swap(passwordFile, (tmp) => writeFileSync(tmp, 'p'.repeat(20 * 1024 * 1024)));
    await reloadAndWait(/credentials\.passwordFile \(B2B_PASSWORD_FILE\): \S+ is larger than 4096 bytes/, 'a 20 MB password file');
    swap(tokenFile, (tmp) => writeFileSync(tmp, 'a'.repeat(40_000)));
    await reloadAndWait(/localization\.tokenFile \(B2B_L10N_TOKEN_FILE\): \S+ is larger than 4096 bytes/, 'a 40 KB token file');
    // A FIFO for every re-read file, re-read four times over: nothing blocks, nothing piles up.
    for (const file of [apiKeyFile, passwordFile, tokenFile]) swap(file, (tmp) => execFileSync('mkfifo', [tmp]));
    for (let i = 0; i < 3; i++) run.child.kill('SIGHUP');
    await reloadAndWait(/is a FIFO, not a regular file/, 'FIFOs');
    // /dev/zero behind a symlink and a sparse 1 GB file: refused before reading, memory stays put.
    swap(apiKeyFile, (tmp) => symlinkSync('/dev/zero', tmp));
    swap(passwordFile, (tmp) => {
      writeFileSync(tmp, '');
      execFileSync('truncate', ['-s', '1G', tmp]);
    });
    await reloadAndWait(/credentials\.apiKeyFile \(B2B_API_KEY_FILE\): \S+ is a character device, not a regular file/, '/dev/zero');
    assert.match(run.stdout(), /credentials\.passwordFile \(B2B_PASSWORD_FILE\): \S+ is larger than 4096 bytes \(1073741824\)/);
    assert.ok(rssMb(pid) < 200, `RSS ${rssMb(pid)} MB`);
    const ready = await send(adminPort, { path: '/readyz' });
    assert.equal(ready.status, 200, 'the token obtained with the previous values stays valid');

    const output = run.stdout() + run.stderr();
    for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, L10N_TOKEN, 'pppppppppppppppp', 'aaaaaaaaaaaaaaaa']) {
      assert.ok(!output.includes(secret), `a secret reached the output: ${secret.slice(0, 8)}…`);
    }
    assert.doesNotMatch(output, /[A-Za-z0-9_-]{43}/, 'no token (the simulator issues 43-character tokens)');
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.stderr());
  });
});
