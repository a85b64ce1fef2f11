import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { spawnCli } from '../helpers/cli.js';
import { CREDENTIALS, startSimulator } from '../helpers/stack.js';
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
});
