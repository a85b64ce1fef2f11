import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createPrivateKey } from 'node:crypto';
import { createClientCa } from '../helpers/client-certs.js';
import { validateConfig } from '../../src/config/validate-config.js';
import { packageVersion } from '../../src/entry/process-io.js';
import { configWarnings } from '../../src/config/warnings.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createSidecar } from '../../src/sidecar.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { testTls } from '../helpers/tls.js';
import { runCli, spawnCli } from '../helpers/cli.js';

/** The service is never reached in these tests: start-up does not wait for a token. */
async function startedLog(overrides: Record<string, unknown>) {
  const config = validateConfig({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    service: { baseUrl: 'https://127.0.0.1:1/gateway/', caFile: (await testTls()).caFile, tokenTimeoutMs: 100 },
    credentials: { apiKey: 'start-log-key-1', password: 'start-log-password-2' },
    ...overrides,
  });
  const log = createCaptureLogger();
  const sidecar = createSidecar(config, { logger: log.logger, secrets: log.secrets, clock: new FakeClock() });
  await sidecar.start();
  await sidecar.stop();
  return log;
}

/** Warnings other than the token request the stop cut short. */
function configWarningLines(log: ReturnType<typeof createCaptureLogger>): string[] {
  return log.lines().filter((l) => l.level === 'warn' && l.message !== 'token request failed').map((l) => String(l.message));
}

describe('start-up log', () => {
  it('"sidecar started" prints the gentoken URL (baseUrl with its path), never a credential', async () => {
    const log = await startedLog({});
    const started = log.lines().find((l) => l.message === 'sidecar started');
    assert.equal(started?.gentoken, 'https://127.0.0.1:1/gateway/pub/b2b/v1/auth/gentoken');
    assert.ok(!log.text().includes('start-log-key-1') && !log.text().includes('start-log-password-2'));
    assert.deepEqual(configWarningLines(log), []);
  });

  it('says which version runs on which Node.js, in the start log and in b2b_sidecar_build_info', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.equal(packageVersion(), version, 'the process entry reads the package version');
    // Installed, the command is a symlink (node_modules/.bin, /usr/bin) to dist/cli.js.
    const bin = join(mkdtempSync(join(tmpdir(), 'b2b-bin-')), 'b2b-sidecar');
    symlinkSync(fileURLToPath(new URL('../../dist/cli.js', import.meta.url)), bin);
    assert.equal(packageVersion(bin), version);
    const config = validateConfig({
      listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 },
      service: { baseUrl: 'https://127.0.0.1:1', caFile: (await testTls()).caFile, tokenTimeoutMs: 100 },
      credentials: { apiKey: 'start-log-key-1', password: 'start-log-password-2' },
    });
    const log = createCaptureLogger();
    const sidecar = createSidecar(config, { logger: log.logger, secrets: log.secrets, clock: new FakeClock(), version });
    await sidecar.start();
    const metrics = await sidecar.registry.metrics();
    await sidecar.stop();
    const started = log.lines().find((l) => l.message === 'sidecar started');
    assert.equal(started?.version, version);
    assert.equal(started?.node, process.version);
    assert.match(metrics, new RegExp(`^b2b_sidecar_build_info\\{version="${version.replace(/\./g, '\\.')}",node="${process.version}"\\} 1$`, 'm'));
  });

  it('every command that starts a sidecar logs the package version, and --version and build_info carry it (the built CLI)', async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    const printed = await runCli(['--version']);
    assert.equal(printed.code, 0);
    assert.equal(printed.stdout.trim(), version);
    const demo = spawnCli(['demo']);
    try {
      const admin = (await demo.waitFor(/^ {2}admin: *(http:\/\/127\.0\.0\.1:\d+)/m, 30_000))[1]!;
      const started = demo.stderr().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l['message'] === 'sidecar started');
      assert.equal(started?.['version'], version, `demo's start log: ${demo.stderr()}`);
      assert.equal(started?.['node'], process.version);
      const metrics = await (await fetch(`${admin}/metrics`)).text();
      assert.match(metrics, new RegExp(`^b2b_sidecar_build_info\\{version="${version.replace(/\./g, '\\.')}",`, 'm'));
    } finally {
      demo.child.kill('SIGTERM');
    }
    await demo.exited;
  });

  it('guard.allowAnyone logs once that anyone who can reach the listener acts as the integrator', async () => {
    const log = await startedLog({ guard: { allow: ['0.0.0.0/0', '::/0'], allowAnyone: true } });
    const warnings = configWarningLines(log);
    assert.deepEqual(warnings, ['guard.allowAnyone is true: anyone who can reach the proxy listener acts as the integrator']);
  });

  it('listen.host 0.0.0.0 with the default allow list logs once that only loopback will be served', async () => {
    const log = await startedLog({ listen: { host: '0.0.0.0', port: 0 } });
    const warnings = configWarningLines(log);
    assert.deepEqual(warnings, ['listen.host is 0.0.0.0, but guard.allow admits only loopback: only clients on this host will be served, others get 403']);
  });

  it('warns about a trustedProxies entry wider than one address, not about single addresses', () => {
    const base = { service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'k-1234', password: 'p-1234' } };
    const messages = configWarnings(validateConfig({ ...base, guard: { trustedProxies: ['10.0.0.0/24', '10.0.1.5', 'fd00::1/128', 'fd00::/64'] } })).map((w) => w.message);
    assert.deepEqual(messages.map((m) => m.split(' is wider')[0]), ['guard.trustedProxies entry 10.0.0.0/24', 'guard.trustedProxies entry fd00::/64']);
  });

  it('warns about a secret file every local user can read, naming the key and the mode, never the contents', () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-warn-'));
    const open = join(dir, 'password');
    const closed = join(dir, 'api-key');
    writeFileSync(open, 'world-readable-password-1', { mode: 0o644 });
    chmodSync(open, 0o644);
    writeFileSync(closed, 'private-api-key-2', { mode: 0o600 });
    const messages = configWarnings(validateConfig({ service: { baseUrl: 'https://api.example.com' }, credentials: { apiKeyFile: closed, passwordFile: open } })).map((w) => w.message);
    assert.deepEqual(messages, [`credentials.passwordFile: ${open} is readable by every user of this host (mode 0644); make it 0600 or 0640 with a group for the sidecar`]);
  });

  it('warns about secrets written inline in a config file every local user can read, naming each key and the mode; not in a 0640 one, not a proxy URL without a password', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-warn-inline-'));
    const file = join(dir, 'sidecar.yaml');
    const text = [
      'service: { baseUrl: "https://api.example.com", proxy: "http://proxy.internal:3128" }',
      'credentials: { apiKey: "inline-api-key-9", password: "inline-password-8" }',
      'localization: { baseUrl: "https://l10n.example.com", token: "inline-l10n-token-7", proxy: "http://user:pw-1234@proxy.internal:3128" }',
      '',
    ].join('\n');
    writeFileSync(file, text, { mode: 0o644 });
    chmodSync(file, 0o644);
    const messages = configWarnings(await loadConfig(file, {})).map((w) => w.message);
    const inline = messages.filter((m) => m.includes('which every user of this host can read'));
    assert.deepEqual(inline.map((m) => m.split(' is written in')[0]), ['credentials.apiKey', 'credentials.password', 'localization.proxy', 'localization.token']);
    assert.equal(inline[0], `credentials.apiKey is written in ${file}, which every user of this host can read (mode 0644): make the file 0600 or 0640 with a group for the sidecar, or move the secret to credentials.apiKeyFile`);
    assert.match(inline[2]!, /move the secret to localization\.proxyAuthFile$/);
    for (const secret of ['inline-api-key-9', 'inline-password-8', 'inline-l10n-token-7', 'pw-1234']) assert.equal(messages.join('\n').includes(secret), false);
    chmodSync(file, 0o640);
    assert.deepEqual(configWarnings(await loadConfig(file, {})).map((w) => w.message).filter((m) => m.includes('which every user')), []);
  });

  it('warns about every secret file a local user can read: proxyAuthFile, keyFile and keyPassphraseFile too, not the certificate', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-warn-'));
    const ca = await createClientCa();
    const { certPem, keyPem } = await ca.issue('sidecar');
    const passphrase = 'key-passphrase-123';
    const files = {
      certFile: [join(dir, 'client.crt'), certPem],
      keyFile: [join(dir, 'client.key'), createPrivateKey(keyPem).export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase }) as string],
      keyPassphraseFile: [join(dir, 'passphrase'), passphrase],
      proxyAuthFile: [join(dir, 'proxy-auth'), 'proxy-user:proxy-password-1'],
    } as const;
    for (const [file, text] of Object.values(files)) {
      writeFileSync(file, text);
      chmodSync(file, 0o644);
    }
    const messages = configWarnings(validateConfig({
      service: { baseUrl: 'https://api.example.com', proxy: 'http://127.0.0.1:3128', certFile: files.certFile[0], keyFile: files.keyFile[0], keyPassphraseFile: files.keyPassphraseFile[0], proxyAuthFile: files.proxyAuthFile[0] },
      credentials: { apiKey: 'k-1234', password: 'p-1234' },
    })).map((w) => w.message.split(' is readable')[0]);
    assert.deepEqual(messages.sort(), [
      `service.keyFile: ${files.keyFile[0]}`, `service.keyPassphraseFile: ${files.keyPassphraseFile[0]}`, `service.proxyAuthFile: ${files.proxyAuthFile[0]}`,
    ].sort());
  });

  it('no wildcard warning once guard.allow admits a non-loopback range, also for ::', () => {
    const base = { service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'k-1234', password: 'p-1234' } };
    assert.deepEqual(configWarnings(validateConfig({ ...base, listen: { host: '::' }, guard: { allow: ['10.0.0.0/8', '127.0.0.1'] } })), []);
    assert.equal(configWarnings(validateConfig({ ...base, listen: { host: '::' }, guard: { allow: ['::ffff:127.0.0.1', '::1'] } })).length, 1);
  });
});
