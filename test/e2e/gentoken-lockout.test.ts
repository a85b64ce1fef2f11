import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { spawnCli } from '../helpers/cli.js';
import { ok, startGentokenServer } from '../helpers/gentoken-server.js';
import { testTls } from '../helpers/tls.js';

/**
 * The built CLI against an auth server that refuses the credentials: the retries come no sooner
 * than the lockout-safe schedule (5 s, then 10 s; never three attempts within 15 s), on the real
 * clock of a real process. Then the corrected password file is tried at once. Bounded: ~17 s.
 */
describe('run: gentoken refusing the credentials', () => {
  it('retries no sooner than 5 s, then 10 s, and tries a corrected password file at once', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-lockout-'));
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, 'wrong-password-000\n', { mode: 0o600 });
    const times: number[] = [];
    const server = await startGentokenServer((req) => {
      times.push(performance.now());
      return (JSON.parse(req.body) as { password?: string }).password === 'right-password-111'
        ? ok('tkn-after-fix-0123456789', 900)
        : { status: 401, body: { message: 'Invalid ApiKey or password' } };
    });
    const config = join(dir, 'sidecar.yaml');
    writeFileSync(config, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${server.url}", caFile: "${(await testTls()).caFile}" }`,
      `credentials: { apiKey: "apikey-lockout-0123", passwordFile: "${passwordFile}" }`,
    ].join('\n'));
    const p = spawnCli(['run', '--config', config]);
    try {
      await server.received(3);
      const gaps = [times[1]! - times[0]!, times[2]! - times[1]!];
      // Never sooner than the schedule (jitter only upward); timers may fire late, never early.
      assert.ok(gaps[0]! >= 5_000 - 50, `first retry after ${gaps[0]} ms`);
      assert.ok(gaps[1]! >= 10_000 - 50, `second retry after ${gaps[1]} ms`);
      const rejectedLines = () => p.stdout().split('\n').filter((l) => l.includes('token request rejected by the auth server'));
      for (let i = 0; i < 100 && rejectedLines().length < 3; i++) await new Promise((r) => setTimeout(r, 50));
      const rejected = rejectedLines();
      assert.equal(rejected.length, 3);
      assert.match(rejected[1]!, /"retryInSeconds":1[0-2](\.\d)?[,}]/, 'the next retry in 10–12 s');

      writeFileSync(passwordFile, 'right-password-111\n');
      const fixedAt = performance.now();
      await server.received(4);
      assert.ok(times[3]! - fixedAt < 15_000, 'the corrected file is tried at once, not at the next scheduled retry (20 s on)');
      await p.waitFor(/"message":"token obtained"/);
      assert.ok(!p.stdout().includes('wrong-password-000') && !p.stdout().includes('right-password-111'), 'no password in the log');
    } finally {
      p.child.kill('SIGTERM');
      await p.exited;
      await server.close();
    }
  });
});
