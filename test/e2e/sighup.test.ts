import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { spawnCli } from '../helpers/cli.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { ok, startGentokenServer } from '../helpers/gentoken-server.js';
import { CREDENTIALS, startSidecar, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

describe('SIGHUP', () => {
  it('logs what it re-read every time, also when nothing changed, and which credentials changed', async (t) => {
    const tls = await testTls();
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const dir = mkdtempSync(join(tmpdir(), 'b2b-sighup-'));
    const apiKeyFile = join(dir, 'api-key');
    writeFileSync(apiKeyFile, `${CREDENTIALS.apiKey}\n`, { mode: 0o600 });
    const config = join(dir, 'sidecar.yaml');
    writeFileSync(config, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${sim.baseUrl}", caFile: "${tls.caFile}" }`,
      `credentials: { apiKeyFile: "${apiKeyFile}", password: "${CREDENTIALS.password}" }`,
      '',
    ].join('\n'));
    const run = spawnCli(['run', '--config', config]);
    t.after(() => run.child.kill('SIGKILL'));
    await run.waitFor(/"message":"token obtained"/);
    run.child.kill('SIGHUP');
    const line = JSON.parse((await run.waitFor(/^\{.*"message":"SIGHUP: re-read the files".*\}$/m))[0]) as Record<string, unknown>;
    assert.deepEqual(line.files, ['credentials.apiKeyFile']);
    assert.equal(line.credentials, 'unchanged');
    run.child.kill('SIGTERM');
    assert.equal(await run.exited, 0, run.stderr());
    assert.equal(run.stdout().includes(CREDENTIALS.apiKey), false);
  });

  it('with unchanged files and no valid token after a refusal: one gentoken attempt at once, not at the schedule\'s next step', async (t) => {
    // The vendor unblocks the key on its side; the operator sends SIGHUP (systemctl reload).
    let fixed = false;
    const server = await startGentokenServer(() => (fixed ? ok('tkn-after-fix-0123456789', 900) : { status: 401, body: { message: 'Invalid ApiKey or password' } }));
    t.after(() => server.close());
    const clock = new FakeClock();
    const s = await startSidecar({ baseUrl: server.url, clock, random: () => 0 });
    t.after(() => s.stop());
    const logged = async (message: string, count = 1) => {
      for (let i = 0; i < 500; i++) {
        const lines = s.log.lines().filter((l) => l.message === message);
        if (lines.length >= count) return lines.at(-1)!;
        await new Promise((r) => setTimeout(r, 10));
      }
      throw new Error(`no ${count}× "${message}" in ${JSON.stringify(s.log.lines())}`);
    };
    await logged('token request rejected by the auth server');
    // Within the lockout-safe schedule's first step of the last call: left to the schedule.
    await s.sidecar.reloadCredentials(true);
    assert.equal((await logged('SIGHUP: nothing to re-read (no file-based settings)')).gentoken, 'left to the schedule: the last call was 0 s ago');
    await clock.advanceAsync(5_000); // the scheduled retry at 5 s, refused too; the next is at 15 s
    await logged('token request rejected by the auth server', 2);
    await clock.advanceAsync(6_000);
    assert.equal(server.requests.length, 2);
    fixed = true;
    await s.sidecar.reloadCredentials(true);
    assert.equal((await logged('SIGHUP: nothing to re-read (no file-based settings)', 2)).gentoken, 'attempt now');
    await server.received(3);
    assert.equal((await logged('token obtained')).trigger, 'retry');
    assert.equal(server.requests.length, 3, 'at 11 s, before the schedule\'s 15 s');
    await s.sidecar.reloadCredentials(true);
    assert.equal((await logged('SIGHUP: nothing to re-read (no file-based settings)', 3)).gentoken, 'not needed (a valid token is held)');
    assert.equal(server.requests.length, 3);
  });
});
