import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadAdminSection } from '../../src/config/load-config.js';
import { ConfigError } from '../../src/shared/errors.js';
import { runCli } from '../helpers/cli.js';
import { otherUser, type OtherUser } from '../helpers/other-user.js';
import { CREDENTIALS, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';

/**
 * `status`, `wait` and `healthcheck` only talk to the admin listener, so they read only the
 * config's admin section: a packaged host's config whose credentials live where only the service
 * can read them, an app unit's `ExecStartPre=b2b-sidecar wait --config …` running as the app's
 * user, or a config without service.baseUrl must all work (through the built CLI).
 */
const COMMANDS: Array<{ args: string[]; out: RegExp }> = [
  { args: ['status'], out: /^ready/ },
  { args: ['wait', '--timeout', '10s'], out: /^ready: .*\/readyz answered 200/ },
  { args: ['healthcheck'], out: /^healthy: .*\/healthz answered 200/ },
];

describe('admin-only commands read only the admin section', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  let sidecar: RunningSidecar;
  let as: OtherUser;
  const dir = mkdtempSync(join(tmpdir(), 'b2b-admin-only-'));
  before(async () => {
    chmodSync(dir, 0o755);
    sim = await startSimulator();
    sidecar = await startSidecar({ baseUrl: sim.baseUrl });
    await waitReady(sidecar);
    as = otherUser();
  });
  after(async () => {
    as.dispose();
    await sidecar.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  let n = 0;
  function configFile(config: Record<string, unknown>): string {
    const file = join(dir, `sidecar-${++n}.yaml`);
    writeFileSync(file, JSON.stringify(config), { mode: 0o644 });
    return file;
  }

  for (const { args, out } of COMMANDS) {
    it(`${args[0]}: credential files that do not exist`, async () => {
      const file = configFile({
        service: { baseUrl: sim.baseUrl },
        credentials: { apiKeyFile: join(dir, 'absent', 'api-key'), passwordFile: join(dir, 'absent', 'password') },
        admin: { host: '127.0.0.1', port: sidecar.adminPort },
      });
      const r = await runCli([...args, '--config', file]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, out);
    });

    it(`${args[0]}: credential files the user running it cannot read`, async () => {
      const apiKeyFile = join(dir, `api-key-${n}`);
      const passwordFile = join(dir, `password-${n}`);
      writeFileSync(apiKeyFile, CREDENTIALS.apiKey);
      writeFileSync(passwordFile, CREDENTIALS.password);
      as.hide(apiKeyFile);
      as.hide(passwordFile);
      const file = configFile({ service: { baseUrl: sim.baseUrl }, credentials: { apiKeyFile, passwordFile }, admin: { port: sidecar.adminPort } });
      const r = await as.run([...args, '--config', file]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, out);
    });

    it(`${args[0]}: a config without service.baseUrl or credentials`, async () => {
      const r = await runCli([...args, '--config', configFile({ admin: { port: sidecar.adminPort } })]);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, out);
    });

    it(`${args[0]}: no --config, the admin port from B2B_ADMIN_PORT, nothing else set`, async () => {
      const r = await runCli(args, { B2B_ADMIN_PORT: String(sidecar.adminPort) });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, out);
    });

    it(`${args[0]}: a malformed admin section still exits 2 naming the key, and nothing else`, async () => {
      const file = configFile({ credentials: { apiKeyFile: join(dir, 'absent') }, admin: { port: 'nine', prot: 1 } });
      const r = await runCli([...args, '--config', file]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /admin\.port \(B2B_ADMIN_PORT\): must be integer/);
      assert.match(r.stderr, /admin\.prot: is not a known key/);
      assert.doesNotMatch(r.stderr, /credentials|service/);
    });
  }
});

describe('loadAdminSection', () => {
  it('without a file: the defaults, 127.0.0.1:9464, and B2B_ADMIN_PORT over them', async () => {
    assert.deepEqual(await loadAdminSection(undefined, {}), { host: '127.0.0.1', port: 9464 });
    assert.deepEqual(await loadAdminSection(undefined, { B2B_ADMIN_PORT: '9500', B2B_LISTEN_PORT: 'x' }), { host: '127.0.0.1', port: 9500 });
  });

  it('a bad B2B_ADMIN_PORT is a problem by key; other bad variables are not read', async () => {
    await assert.rejects(loadAdminSection(undefined, { B2B_ADMIN_PORT: 'x' }), (err: unknown) => err instanceof ConfigError
      && err.problems.length === 1 && /^admin\.port \(B2B_ADMIN_PORT\): "x" is not an integer/.test(err.problems[0]!));
  });

  it('a config file that does not exist is still an error', async () => {
    await assert.rejects(loadAdminSection('/nonexistent/sidecar.yaml', {}), /does not exist/);
  });
});
