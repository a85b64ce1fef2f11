import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import { captureIo } from '../helpers/command-io.js';

const dir = mkdtempSync(join(tmpdir(), 'b2b-check-config-'));


describe('check-config', () => {
  it('prints the effective config as YAML with secrets redacted and exits 0', async () => {
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, 'password-file-content-77');
    const configFile = join(dir, 'sidecar.yaml');
    writeFileSync(configFile, `service:\n  baseUrl: https://api.example.com\ncredentials:\n  apiKey: file-api-key-55\n  passwordFile: ${passwordFile}\n`, { mode: 0o600 });
    const run = captureIo({ B2B_PASSWORD: 'env-password-66', B2B_L10N_BASE_URL: 'https://l.example', B2B_L10N_TOKEN: 'l10n-token-88' });
    assert.equal(await checkConfigCommand({ config: configFile }, run.io), 0);
    const printed = run.stdout();
    for (const secret of ['file-api-key-55', 'env-password-66', 'password-file-content-77', 'l10n-token-88']) {
      assert.ok(!printed.includes(secret), `${secret} leaked`);
    }
    const config = parse(printed);
    assert.equal(config.credentials.apiKey, '[REDACTED]');
    assert.equal(config.credentials.password, '[REDACTED]');
    assert.equal(config.credentials.passwordFile, undefined, 'the env password replaced the file');
    assert.equal(config.localization.token, '[REDACTED]');
    assert.equal(config.service.baseUrl, 'https://api.example.com');
    assert.equal(config.token.attach[0].value, 'Bearer {token}');
    // The env password displaced the file the config names: said, never silent.
    assert.equal(run.stderr(), 'warning: credentials.passwordFile from the config file is ignored: B2B_PASSWORD in the environment sets credentials.password, which is used instead\n');
  });

  it('prints a ...File key as its path, never the file contents', async () => {
    const keyFile = join(dir, 'api-key');
    writeFileSync(keyFile, 'api-key-content-99');
    const run = captureIo({ B2B_BASE_URL: 'https://api.example.com', B2B_API_KEY_FILE: keyFile, B2B_PASSWORD: 'pw-12345' });
    assert.equal(await checkConfigCommand({}, run.io), 0);
    assert.equal(parse(run.stdout()).credentials.apiKeyFile, keyFile);
    assert.match(run.stderr(), /^note: no --config given: the configuration comes from B2B_\* environment variables only$/m);
    assert.ok(!run.stdout().includes('api-key-content-99'));
  });

  it('lists every problem on stderr and exits 2', async () => {
    const run = captureIo({ B2B_BASE_URL: 'http://api.example.com', B2B_LISTEN_PORT: 'abc', B2B_PASSWORD: 'secret-pw-31' });
    assert.equal(await checkConfigCommand({}, run.io), 2);
    const lines = run.stderr().trimEnd().split('\n');
    assert.equal(lines[0], 'invalid configuration:');
    assert.deepEqual(lines.slice(1, -1).map((l) => l.replace(/^ {2}- /, '').replace(/: .*/, '')), [
      'listen.port (B2B_LISTEN_PORT)',
      'service.baseUrl (B2B_BASE_URL)',
      'credentials.apiKey (B2B_API_KEY)',
    ]);
    // Without --config every key reads as missing: the last line says where settings were looked for.
    assert.equal(lines.at(-1), '(no --config given: the configuration comes from B2B_* environment variables only)');
    assert.equal(run.stdout(), '');
    assert.ok(!run.stderr().includes('secret-pw-31'));
  });

  it('exits 2 naming a missing config file', async () => {
    const run = captureIo({});
    assert.equal(await checkConfigCommand({ config: join(dir, 'nope.yaml') }, run.io), 2);
    assert.match(run.stderr(), /nope\.yaml does not exist/);
  });

  it('exits 1 on a failure that is not a configuration problem', async () => {
    const broken = new Writable({ write: (_c, _e, cb) => cb() });
    broken.write = () => { throw new Error('stdout is gone'); };
    const run = captureIo({ B2B_BASE_URL: 'https://api.example.com', B2B_API_KEY: 'k', B2B_PASSWORD: 'p' }, broken);
    assert.equal(await checkConfigCommand({}, run.io), 1);
    assert.match(run.stderr(), /stdout is gone/);
  });
});
