import { singleCredentials } from '../helpers/single-credentials.js';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/shared/errors.js';
import { envReplacements, loadConfig } from '../../src/config/load-config.js';
import { configWarnings } from '../../src/config/warnings.js';

const dir = mkdtempSync(join(tmpdir(), 'b2b-load-config-'));
let counter = 0;

function file(name: string, text: string): string {
  const path = join(dir, `${counter++}-${name}`);
  // 0600, as the README asks: a config every user can read draws a warning of its own.
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

async function problemsOf(promise: Promise<unknown>): Promise<string[]> {
  try {
    await promise;
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    return err.problems;
  }
  assert.fail('expected the configuration to be rejected');
}

const YAML_CONFIG = `
service:
  baseUrl: https://api.example.com
credentials:
  apiKey: file-key
  password: file-password
listen: { port: 18080 }
`;

const ENV_CREDENTIALS = { B2B_BASE_URL: 'https://env.example.com', B2B_API_KEY: 'env-key', B2B_PASSWORD: 'env-password' };

describe('loadConfig: files', () => {
  it('loads YAML and fills defaults', async () => {
    const config = await loadConfig(file('c.yaml', YAML_CONFIG), {});
    assert.equal(config.service.baseUrl, 'https://api.example.com');
    assert.equal(config.listen.port, 18080);
    assert.equal(config.admin.port, 9464);
    assert.equal(config.token.attach.length, 2);
  });

  it('loads a .json file', async () => {
    const json = { service: { baseUrl: 'https://json.example.com' }, credentials: { apiKey: 'k', password: 'p' }, log: { level: 'debug' } };
    const config = await loadConfig(file('c.json', JSON.stringify(json, null, '\t')), {});
    assert.equal(config.service.baseUrl, 'https://json.example.com');
    assert.equal(config.log.level, 'debug');
  });

  it('names a missing file', async () => {
    const missing = join(dir, 'missing.yaml');
    assert.deepEqual(await problemsOf(loadConfig(missing, {})), [`config file ${missing} does not exist`]);
  });

  it('names the file and the line of a YAML error, without quoting the source', async () => {
    const path = file('bad.yaml', 'service:\n  baseUrl: https://x.example\ncredentials:\n  password: "secret-in-broken-line\n');
    const problems = await problemsOf(loadConfig(path, {}));
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, new RegExp(`^config file ${path}: invalid YAML at line \\d+, column \\d+: `));
    assert.ok(!problems[0]!.includes('secret-in-broken-line'));
    const dup = await problemsOf(loadConfig(file('dup.yaml', 'log: {}\nlog: {}\n'), {}));
    assert.match(dup[0]!, /invalid YAML at line 2, column 1: Map keys must be unique/);
  });

  it('names the line of an unquoted value starting with *, never the value (YAML reads it as an alias)', async () => {
    const path = file('alias.yaml', 'service:\n  baseUrl: https://x.example\ncredentials:\n  apiKey: k-1\n  password: *Secr3tPass\n');
    const problems = await problemsOf(loadConfig(path, {}));
    assert.deepEqual(problems, [`config file ${path}: unresolved YAML alias at line 5: quote values that start with * & or !`]);
  });

  it('reports unquoted values starting with & or !, which YAML silently changes, by line and never by value', async () => {
    const path = file('anchor-tag.yaml', [
      'service:',
      '  baseUrl: https://x.example',
      'credentials:',
      '  apiKey: &Anch0rKey rest-of-key', // an anchor: the value becomes "rest-of-key"
      '  password: !T4gPass rest', // a tag: the value becomes "rest"
      'admin: { host: &loopback 127.0.0.1 }', // anchors used as anchors are fine
      'listen: { host: *loopback }',
    ].join('\n'));
    const problems = await problemsOf(loadConfig(path, {}));
    assert.deepEqual(problems, [
      `config file ${path}: unknown YAML tag at line 5 changes the value: quote values that start with * & or !`,
      `config file ${path}: unused YAML anchor at line 4 changes the value: quote values that start with * & or !`,
    ]);
    for (const secret of ['Anch0rKey', 'T4gPass']) assert.ok(!problems.join().includes(secret));
    const quoted = await loadConfig(file('quoted.yaml', 'service: { baseUrl: https://x.example }\ncredentials: { apiKey: "&k", password: "*p!" }\n'), {});
    assert.deepEqual([singleCredentials(quoted).apiKey, singleCredentials(quoted).password], ['&k', '*p!']);
  });

  it('names the line of an unknown key in the file, with the nearest known key', async () => {
    const path = file('typo.yaml', `${YAML_CONFIG}tokne:\n  renewAt: 0.5\nguard:\n  allow: ['127.0.0.1/32']\n  trustedProxys: []\n`);
    assert.deepEqual(await problemsOf(loadConfig(path, {})), [
      `tokne: is not a known key (did you mean token?) at line 8 of ${path}`,
      `guard.trustedProxys: is not a known key (did you mean trustedProxies?) at line 12 of ${path}`,
    ]);
  });

  it('rejects a file that is not a mapping; an empty file means env only', async () => {
    assert.match((await problemsOf(loadConfig(file('list.yaml', '- a\n'), {})))[0]!, /must be a mapping/);
    const config = await loadConfig(file('empty.yaml', ''), ENV_CREDENTIALS);
    assert.equal(config.service.baseUrl, 'https://env.example.com');
  });
});

describe('loadConfig: environment', () => {
  it('takes everything from the environment when there is no file', async () => {
    const config = await loadConfig(undefined, {
      ...ENV_CREDENTIALS,
      B2B_RK_OBJECT_ID: 'obj-7',
      B2B_LISTEN_PORT: '0',
      B2B_ADMIN_PORT: '9999',
      B2B_LOG_LEVEL: 'warn',
      B2B_LOG_REQUESTS: 'true',
      B2B_L10N_BASE_URL: 'https://l10n.example.com',
      UNRELATED: 'x',
    });
    assert.equal(singleCredentials(config).apiKey, 'env-key');
    assert.equal(singleCredentials(config).rkObjectId, 'obj-7');
    assert.equal(config.listen.port, 0);
    assert.equal(config.admin.port, 9999);
    assert.equal(config.log.level, 'warn');
    assert.equal(config.log.requests, true);
    assert.equal(config.localization?.baseUrl, 'https://l10n.example.com');
    assert.equal(config.localization?.pathPrefix, '/l10n');
  });

  it('overrides the file and ignores empty variables', async () => {
    const config = await loadConfig(file('c.yaml', YAML_CONFIG), { B2B_BASE_URL: 'https://other.example.com', B2B_LISTEN_PORT: '', B2B_API_KEY: '' });
    assert.equal(config.service.baseUrl, 'https://other.example.com');
    assert.equal(config.listen.port, 18080);
    assert.equal(singleCredentials(config).apiKey, 'file-key');
  });

  it('reports values that do not coerce to the key type, with the rest', async () => {
    const problems = await problemsOf(loadConfig(undefined, {
      B2B_BASE_URL: 'http://insecure.example.com',
      B2B_API_KEY: 'k',
      B2B_PASSWORD: 'p',
      B2B_LISTEN_PORT: 'abc',
      B2B_ADMIN_PORT: '80.5',
      B2B_LOG_REQUESTS: 'maybe',
      B2B_LOG_LEVEL: 'chatty',
    }));
    assert.deepEqual(problems.map((p) => p.replace(/: .*/, '')), [
      'listen.port (B2B_LISTEN_PORT)',
      'admin.port (B2B_ADMIN_PORT)',
      'log.requests (B2B_LOG_REQUESTS)',
      'log.level (B2B_LOG_LEVEL)',
      'service.baseUrl (B2B_BASE_URL)',
    ]);
    assert.equal(problems[0], 'listen.port (B2B_LISTEN_PORT): "abc" is not an integer');
  });

  it('maps *_FILE variables to the ...File keys and keeps them as paths', async () => {
    const keyFile = file('api-key', 'key-from-file');
    const passwordFile = file('password', 'password-from-file');
    const l10nFile = file('l10n-token', 'l10n-from-file');
    const config = await loadConfig(undefined, {
      B2B_BASE_URL: 'https://api.example.com',
      B2B_API_KEY_FILE: keyFile,
      B2B_PASSWORD_FILE: passwordFile,
      B2B_L10N_BASE_URL: 'https://l10n.example.com',
      B2B_L10N_TOKEN_FILE: l10nFile,
    });
    assert.equal(singleCredentials(config).apiKeyFile, keyFile);
    assert.equal(singleCredentials(config).passwordFile, passwordFile);
    assert.equal(config.localization?.tokenFile, l10nFile);
    assert.equal(singleCredentials(config).apiKey, undefined);
    assert.ok(!JSON.stringify(config).includes('from-file'));
  });

  it('lets an env var replace the file\'s choice between a value and its file', async () => {
    const passwordFile = file('password', 'pw');
    const yaml = `service: { baseUrl: "https://api.example.com" }\ncredentials: { apiKey: k, passwordFile: "${passwordFile}" }\n`;
    const byValue = await loadConfig(file('c.yaml', yaml), { B2B_PASSWORD: 'env-password' });
    assert.equal(singleCredentials(byValue).password, 'env-password');
    assert.equal(singleCredentials(byValue).passwordFile, undefined);
    const keyFile = file('key', 'k');
    const byFile = await loadConfig(file('c.yaml', yaml), { B2B_API_KEY_FILE: keyFile });
    assert.equal(singleCredentials(byFile).apiKeyFile, keyFile);
    assert.equal(singleCredentials(byFile).apiKey, undefined);
    assert.equal(singleCredentials(byFile).passwordFile, passwordFile);
    // Which source is used is said, not silent (logged at start, printed by check-config).
    assert.deepEqual(envReplacements(byValue), ['credentials.passwordFile from the config file is ignored: B2B_PASSWORD in the environment sets credentials.password, which is used instead']);
    assert.deepEqual(envReplacements(byFile), ['credentials.apiKey from the config file is ignored: B2B_API_KEY_FILE in the environment sets credentials.apiKeyFile, which is used instead']);
    assert.deepEqual(configWarnings(byValue).map((w) => w.message), envReplacements(byValue));
    assert.ok(!JSON.stringify(envReplacements(byValue)).includes('env-password'));
  });

  it('finds the credentials systemd\'s LoadCredential= put in $CREDENTIALS_DIRECTORY when nothing else sets them', async () => {
    const credentials = mkdtempSync(join(tmpdir(), 'b2b-credentials-directory-'));
    writeFileSync(join(credentials, 'api-key'), 'directory-key-1');
    writeFileSync(join(credentials, 'password'), 'directory-password-2');
    const yaml = file('no-credentials.yaml', 'service: { baseUrl: "https://api.example.com" }\n');
    const config = await loadConfig(yaml, { CREDENTIALS_DIRECTORY: credentials });
    assert.equal(singleCredentials(config).apiKeyFile, join(credentials, 'api-key'));
    assert.equal(singleCredentials(config).passwordFile, join(credentials, 'password'));
    // A credential set elsewhere wins, and a directory without the file adds nothing.
    const byEnv = await loadConfig(yaml, { CREDENTIALS_DIRECTORY: credentials, B2B_PASSWORD: 'env-password' });
    assert.equal(singleCredentials(byEnv).password, 'env-password');
    assert.equal(singleCredentials(byEnv).passwordFile, undefined);
    assert.deepEqual(await problemsOf(loadConfig(yaml, { CREDENTIALS_DIRECTORY: tmpdir() + '/nonexistent-b2b' })), [
      'credentials.apiKey (B2B_API_KEY): missing credential: set apiKey or apiKeyFile (B2B_API_KEY_FILE)',
      'credentials.password (B2B_PASSWORD): missing credential: set password or passwordFile (B2B_PASSWORD_FILE)',
    ]);
  });

  it('$CREDENTIALS_DIRECTORY replaces the credential files the config names (the shipped example\'s), and says so', async () => {
    const credentials = mkdtempSync(join(tmpdir(), 'b2b-credentials-directory-'));
    writeFileSync(join(credentials, 'api-key'), 'directory-key-1');
    writeFileSync(join(credentials, 'password'), 'directory-password-2');
    const yaml = file('example-like.yaml', 'service: { baseUrl: "https://api.example.com" }\ncredentials: { apiKeyFile: /run/secrets/b2b/api-key, password: inline-password-3 }\n');
    const config = await loadConfig(yaml, { CREDENTIALS_DIRECTORY: credentials });
    assert.deepEqual(config.credentials, { apiKeyFile: join(credentials, 'api-key'), passwordFile: join(credentials, 'password') });
    assert.deepEqual(envReplacements(config), [
      'credentials.apiKeyFile from the config file is ignored: api-key in $CREDENTIALS_DIRECTORY (systemd\'s LoadCredential=) sets credentials.apiKeyFile, which is used instead',
      'credentials.password from the config file is ignored: password in $CREDENTIALS_DIRECTORY (systemd\'s LoadCredential=) sets credentials.passwordFile, which is used instead',
    ]);
    assert.ok(!JSON.stringify(envReplacements(config)).includes('inline-password-3'));
    // The environment still wins (the unit's B2B_*_FILE point at the same copies).
    const byEnv = await loadConfig(yaml, { CREDENTIALS_DIRECTORY: credentials, B2B_API_KEY_FILE: join(credentials, 'password') });
    assert.equal(singleCredentials(byEnv).apiKeyFile, join(credentials, 'password'));
  });

  it('with a list of sets, $CREDENTIALS_DIRECTORY gives a set its credentials as <id>.api-key and <id>.password, and says what it does not use', async () => {
    const credentials = mkdtempSync(join(tmpdir(), 'b2b-credentials-directory-'));
    writeFileSync(join(credentials, 'a.api-key'), 'directory-key-a');
    writeFileSync(join(credentials, 'b.password'), 'directory-password-b');
    writeFileSync(join(credentials, 'api-key'), 'directory-key-single');
    const yaml = file('sets-under-systemd.yaml', 'service: { baseUrl: "https://api.example.com" }\ncredentials:\n'
      + '  - { id: a, apiKey: inline-key-a-0123456789, password: inline-password-a-0123 }\n'
      + '  - { id: b, apiKey: inline-key-b-0123456789, passwordFile: /run/secrets/b/password, pathPrefix: /b/ }\n');
    const config = await loadConfig(yaml, { CREDENTIALS_DIRECTORY: credentials });
    const [a, b] = config.credentials as unknown as Array<Record<string, string>>;
    assert.deepEqual(a, { id: 'a', apiKeyFile: join(credentials, 'a.api-key'), password: 'inline-password-a-0123' });
    assert.deepEqual(b, { id: 'b', apiKey: 'inline-key-b-0123456789', passwordFile: join(credentials, 'b.password'), pathPrefix: '/b/' });
    assert.deepEqual(envReplacements(config), [
      'credentials[0].apiKey from the config file is ignored: a.api-key in $CREDENTIALS_DIRECTORY (systemd\'s LoadCredential=) sets credentials[0].apiKeyFile, which is used instead',
      'credentials[1].passwordFile from the config file is ignored: b.password in $CREDENTIALS_DIRECTORY (systemd\'s LoadCredential=) sets credentials[1].passwordFile, which is used instead',
      'api-key in $CREDENTIALS_DIRECTORY is not used: the config lists credential sets, and a set\'s is named <id>.api-key (LoadCredential=<id>.api-key:FILE)',
    ]);
    assert.ok(!JSON.stringify(envReplacements(config)).includes('inline-'), 'no value is echoed');
    // A set's file that does not exist names its own credential name.
    const missing = file('sets-missing.yaml', 'service: { baseUrl: "https://api.example.com" }\ncredentials:\n'
      + '  - { id: c, apiKeyFile: /nonexistent-b2b/c-key, password: inline-password-c-0123 }\n');
    assert.deepEqual(await problemsOf(loadConfig(missing, { CREDENTIALS_DIRECTORY: credentials })), [
      `credentials[0].apiKeyFile: file /nonexistent-b2b/c-key does not exist, and $CREDENTIALS_DIRECTORY (${credentials}) holds no c.api-key: pass it with LoadCredential=c.api-key:FILE`,
    ]);
  });

  it('a credential file that does not exist names the way out: LoadCredential= and $CREDENTIALS_DIRECTORY', async () => {
    const yaml = file('missing-files.yaml', 'service: { baseUrl: "https://api.example.com" }\ncredentials: { apiKeyFile: /nonexistent-b2b/api-key, passwordFile: /nonexistent-b2b/password }\n');
    const plain = await problemsOf(loadConfig(yaml, {}));
    assert.match(plain[0]!, /^credentials\.apiKeyFile \(B2B_API_KEY_FILE\): file \/nonexistent-b2b\/api-key does not exist \(under systemd, run the command through systemd-run with LoadCredential=api-key:FILE/);
    const empty = mkdtempSync(join(tmpdir(), 'b2b-credentials-empty-'));
    const underSystemd = await problemsOf(loadConfig(yaml, { CREDENTIALS_DIRECTORY: empty }));
    assert.deepEqual(underSystemd, [
      `credentials.apiKeyFile (B2B_API_KEY_FILE): file /nonexistent-b2b/api-key does not exist, and $CREDENTIALS_DIRECTORY (${empty}) holds no api-key: pass it with LoadCredential=api-key:/etc/b2b-sidecar/api-key`,
      `credentials.passwordFile (B2B_PASSWORD_FILE): file /nonexistent-b2b/password does not exist, and $CREDENTIALS_DIRECTORY (${empty}) holds no password: pass it with LoadCredential=password:/etc/b2b-sidecar/password`,
    ]);
  });

  it('reports both when the environment sets a value and its file', async () => {
    const problems = await problemsOf(loadConfig(undefined, { ...ENV_CREDENTIALS, B2B_PASSWORD_FILE: file('pw', 'x') }));
    assert.deepEqual(problems, ['credentials.password (B2B_PASSWORD): set only one of password and passwordFile (B2B_PASSWORD_FILE)']);
  });

  it('reports missing credentials in env-only mode by key and env var', async () => {
    const problems = await problemsOf(loadConfig(undefined, {}));
    assert.deepEqual(problems.map((p) => p.replace(/: .*/, '')), [
      'service.baseUrl (B2B_BASE_URL)',
      'credentials.apiKey (B2B_API_KEY)',
      'credentials.password (B2B_PASSWORD)',
    ]);
  });
});

describe('loadConfig: messages an operator can act on', () => {
  it('an unquoted all-digit password gets "quote it", never the value', async () => {
    const problems = await problemsOf(loadConfig(file('c.yaml', YAML_CONFIG.replace('password: file-password', 'password: 0042424242')), {}));
    assert.deepEqual(problems, ['credentials.password (B2B_PASSWORD): must be text, but YAML read an unquoted number here (leading zeros are lost): quote it, e.g. "012345"']);
    assert.ok(!problems.join().includes('42424242'));
  });

  it('an unquoted yes as an ApiKey gets "quote it"', async () => {
    const problems = await problemsOf(loadConfig(file('c.yaml', YAML_CONFIG.replace('apiKey: file-key', 'apiKey: true')), {}));
    assert.deepEqual(problems, ['credentials.apiKey (B2B_API_KEY): must be text, but YAML read an unquoted yes/no/true/false here: quote it']);
  });

  it('accepts log.requests: yes (and on/off/no) in YAML as the env var does', async () => {
    for (const [word, value] of [['yes', true], ['On', true], ['no', false], ['off', false]] as const) {
      const config = await loadConfig(file('c.yaml', `${YAML_CONFIG}log: { requests: ${word} }\n`), {});
      assert.equal(config.log.requests, value, word);
    }
    assert.match((await problemsOf(loadConfig(file('c.yaml', `${YAML_CONFIG}log: { requests: maybe }\n`), {})))[0]!, /^log\.requests \(B2B_LOG_REQUESTS\): must be boolean/);
  });

  it('a two-document file gets a message without library function names', async () => {
    const path = file('c.yaml', `${YAML_CONFIG}---\nlog: { level: debug }\n`);
    const problems = await problemsOf(loadConfig(path, {}));
    assert.deepEqual(problems, [`config file ${path}: holds more than one YAML document (the "---" at line 8 starts another); keep a single document`]);
    assert.ok(!/parseAllDocuments|YAML\./.test(problems.join()));
  });

  it('a listener host that does not resolve is named by key', async () => {
    const problems = await problemsOf(loadConfig(file('c.yaml', `${YAML_CONFIG}admin: { host: nowhere.invalid }\n`), {}));
    // ENOTFOUND with a resolver (.invalid never exists, RFC 6761); EAI_AGAIN or a timeout without one.
    assert.equal(problems.length, 1);
    assert.match(problems[0]!, /^admin\.host: nowhere\.invalid does not resolve \((ENOTFOUND|EAI_AGAIN|ETIMEOUT)\); use an IP address such as 127\.0\.0\.1, or a name this host can resolve$/);
  });

  it('a listener host name that resolves (localhost) is accepted', async () => {
    const config = await loadConfig(file('c.yaml', YAML_CONFIG.replace('listen: { port: 18080 }', 'listen: { host: localhost, port: 18080 }')), {});
    assert.equal(config.listen.host, 'localhost');
  });
});
