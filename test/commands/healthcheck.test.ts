import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connectHost } from '../../src/observability/admin-client.js';
import { runCli } from '../helpers/cli.js';
import { CREDENTIALS, startSidecar, startSimulator, type RunningSidecar } from '../helpers/stack.js';

/**
 * `b2b-sidecar healthcheck --config FILE` (the image's HEALTHCHECK) against a real sidecar's
 * admin listener, through the built CLI (`npm run build` first).
 */
describe('healthcheck command', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  let sidecar: RunningSidecar;
  const dir = mkdtempSync(join(tmpdir(), 'b2b-healthcheck-'));
  before(async () => {
    sim = await startSimulator();
    sidecar = await startSidecar({ baseUrl: sim.baseUrl });
  });
  after(async () => {
    await sidecar.stop();
    await sim.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A config file like the sidecar's own, with `admin` replaced. */
  function configFile(name: string, admin: Record<string, unknown>): string {
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, JSON.stringify({
      service: { baseUrl: sim.baseUrl, caFile: sidecar.config.service.caFile },
      credentials: CREDENTIALS,
      admin,
    }));
    return file;
  }

  it('exits 0 and says so when /healthz on the configured admin host and port answers 200', async () => {
    const file = configFile('ok', { host: '127.0.0.1', port: sidecar.adminPort });
    const { code, stdout } = await runCli(['healthcheck', '--config', file]);
    assert.equal(code, 0);
    assert.match(stdout, new RegExp(`healthy: http://127\\.0\\.0\\.1:${sidecar.adminPort}/healthz answered 200`));
  });

  it('exits 0 before the first token too: /healthz is liveness, not readiness', async () => {
    const held = await startSidecar({ baseUrl: 'https://127.0.0.1:1', overrides: { service: { tokenTimeoutMs: 1000 } } });
    try {
      assert.equal((await runCli(['healthcheck', '--config', configFile('not-ready', { port: held.adminPort })])).code, 0);
    } finally {
      await held.stop();
    }
  });

  it('exits 1 naming the answer when the admin listener refuses it (admin.allow)', async () => {
    const strict = await startSidecar({ baseUrl: sim.baseUrl, overrides: { admin: { allow: ['10.0.0.0/8'] } } });
    try {
      const { code, stderr } = await runCli(['healthcheck', '--config', configFile('denied', { port: strict.adminPort })]);
      assert.equal(code, 1);
      assert.match(stderr, /unhealthy: .*\/healthz refused: forbidden \(answered 403/);
    } finally {
      await strict.stop();
    }
  });

  it('exits 1 when nothing listens on the configured port', async () => {
    const stopped = await startSidecar({ baseUrl: sim.baseUrl });
    const port = stopped.adminPort;
    await stopped.stop();
    const { code, stderr } = await runCli(['healthcheck', '--config', configFile('gone', { port })]);
    assert.equal(code, 1);
    assert.match(stderr, /could not be reached \(ECONNREFUSED\)/);
  });

  it('exits 2 listing the problem by key for an invalid config, without printing a secret', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, JSON.stringify({ service: { baseUrl: sim.baseUrl }, credentials: CREDENTIALS, admin: { port: 'nine' } }));
    const { code, stderr } = await runCli(['healthcheck', '--config', file]);
    assert.equal(code, 2);
    assert.match(stderr, /admin\.port/);
    assert.doesNotMatch(stderr, new RegExp(CREDENTIALS.password));
  });

  it('reaches a wildcard bind on loopback and strips IPv6 brackets', () => {
    assert.equal(connectHost('0.0.0.0'), '127.0.0.1');
    assert.equal(connectHost('::'), '::1');
    assert.equal(connectHost('[::1]'), '::1');
    assert.equal(connectHost('10.1.2.3'), '10.1.2.3');
  });
});
