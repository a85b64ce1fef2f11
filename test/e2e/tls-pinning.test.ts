import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLocalizationSimulator, type LocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { CREDENTIALS, startSimulator } from '../helpers/stack.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { testTls } from '../helpers/tls.js';

/**
 * Every client that carries a credential verifies the server's certificate even when the
 * environment says not to: with NODE_TLS_REJECT_UNAUTHORIZED=0 and no caFile, the test CA is not
 * trusted, so no request (and no ApiKey, password or localization token) may reach the servers
 * (docs/traps.md T10). The variable is set here only to prove it has no effect.
 */
const INSECURE_ENV = { NODE_TLS_REJECT_UNAUTHORIZED: '0' };
const L10N_TOKEN = 'wlu_pinning7oken1a2b3c4d';

describe('certificate verification cannot be switched off from the environment', () => {
  let b2b: Awaited<ReturnType<typeof startSimulator>>;
  let l10n: LocalizationSimulator;
  let config: string;

  before(async () => {
    b2b = await startSimulator();
    l10n = createLocalizationSimulator({ tls: await testTls(), token: L10N_TOKEN });
    const { url } = await l10n.start();
    const dir = mkdtempSync(join(tmpdir(), 'b2b-tls-pinning-'));
    config = join(dir, 'sidecar.yaml');
    // No caFile anywhere: the simulators' test CA is unknown to the system roots.
    writeFileSync(config, [
      'listen: { host: 127.0.0.1, port: 0 }',
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${b2b.baseUrl}" }`,
      `credentials: { apiKey: "${CREDENTIALS.apiKey}", password: "${CREDENTIALS.password}" }`,
      `localization: { baseUrl: "${url}", token: "${L10N_TOKEN}", watch: [demo/web/en], pollIntervalSeconds: 5 }`,
      '',
    ].join('\n'));
  });
  after(async () => {
    await b2b?.stop();
    await l10n?.stop();
  });

  it('token: refuses the certificate and sends no gentoken request', async () => {
    const { code, stderr } = await runCli(['token', '--config', config], INSECURE_ENV);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /CERT|certificate/i);
    assert.equal(b2b.stats.tokenRequests, 0);
  });

  it('translation: refuses the certificate and sends no request with the localization token', async () => {
    const { code, stderr } = await runCli(['translation', 'demo/web/en', '--config', config], INSECURE_ENV);
    assert.equal(code, 1, stderr);
    assert.equal(l10n.stats.count, 0);
  });

  it('doctor: stops at the connect step', async () => {
    const { code, stdout } = await runCli(['doctor', '--config', config], INSECURE_ENV);
    assert.equal(code, 1, stdout);
    assert.match(stdout, /✗ connect/);
    assert.equal(b2b.stats.tokenRequests, 0);
  });

  it('run: neither the token loop nor the translation poller reaches a server', async () => {
    const run = spawnCli(['run', '--config', config], INSECURE_ENV);
    try {
      await run.waitFor(/"message":"token request failed"/);
      await run.waitFor(/"message":"translation lookup failed"/);
    } finally {
      run.child.kill('SIGTERM');
      await run.exited;
    }
    assert.equal(b2b.stats.tokenRequests, 0);
    assert.equal(l10n.stats.count, 0);
  });
});
