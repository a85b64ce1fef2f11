import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import { credentialSets, defaultSet, tokenFileFor } from '../../src/config/credential-sets.js';
import { loadConfig } from '../../src/config/load-config.js';
import { validateConfig } from '../../src/config/validate-config.js';
import { ConfigError } from '../../src/shared/errors.js';
import { captureIo } from '../helpers/command-io.js';

/** The two forms of `credentials` (docs/credential-sets.md) and check-config's problems per set. */
const dir = mkdtempSync(join(tmpdir(), 'b2b-credential-sets-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const SERVICE = { baseUrl: 'https://api.example.com' };
const set = (id: string, more: Record<string, unknown> = {}) => ({ id, apiKey: `key-${id}-0123456789`, password: `password-${id}-0123456789`, ...more });

/** check-config on `config`: its exit code and the keys its problems name. */
async function problems(config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): Promise<{ code: number; keys: string[]; lines: string[]; stdout: string }> {
  const file = join(dir, `c-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify(config), { mode: 0o600 });
  const run = captureIo(env);
  const code = await checkConfigCommand({ config: file }, run.io);
  const lines = run.stderr().split('\n').filter((l) => l.startsWith('  - ')).map((l) => l.slice(4));
  return { code, keys: lines.map((l) => l.replace(/:.*/, '')), lines, stdout: run.stdout() };
}

describe('credential sets in the config', () => {
  it('the object form is one set with the id default and today\'s token file name', () => {
    const config = validateConfig({ service: SERVICE, credentials: { apiKey: 'key-0123456789', password: 'password-0123456789' }, token: { file: join(dir, 'token') } });
    const sets = credentialSets(config);
    assert.deepEqual(sets.map((s) => [s.id, s.single, s.baseUrl]), [['default', true, SERVICE.baseUrl]]);
    assert.equal(defaultSet(sets)?.id, 'default');
    assert.equal(tokenFileFor(config.token.file!, sets[0]!), join(dir, 'token'));
    assert.equal(config.readiness.credentials, 'all');
  });

  it('the list form: each set with its id, its own baseUrl or the service\'s, its prefix without the trailing slash, <file>.<id>', () => {
    const config = validateConfig({
      service: SERVICE,
      credentials: [set('a', { listen: { port: 8081 } }), set('b', { pathPrefix: '/objects-b/', baseUrl: 'https://api2.example.com' }), set('c')],
    });
    const sets = credentialSets(config);
    assert.deepEqual(sets.map((s) => [s.id, s.baseUrl, s.pathPrefix, s.listen]), [
      ['a', SERVICE.baseUrl, undefined, { kind: 'tcp', host: '127.0.0.1', port: 8081 }],
      ['b', 'https://api2.example.com', '/objects-b', undefined],
      ['c', SERVICE.baseUrl, undefined, undefined],
    ]);
    assert.equal(defaultSet(sets)?.id, 'c');
    assert.equal(tokenFileFor('/run/b2b/token', sets[1]!), '/run/b2b/token.b');
  });

  it('config/credential-sets.example.yaml loads through the real loader, failing only on its credential files', async () => {
    const example = new URL('../../config/credential-sets.example.yaml', import.meta.url).pathname;
    await assert.rejects(loadConfig(example, {}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.ok(err.problems.length > 0);
      for (const problem of err.problems) assert.match(problem, /^credentials\[\d\]\.(apiKeyFile|passwordFile): file \S+ does not exist/);
      return true;
    });
  });

  it('refuses the credential environment variables with a list: one variable cannot say which set it means', async () => {
    const file = join(dir, 'list.yaml');
    writeFileSync(file, stringify({ service: SERVICE, credentials: [set('a')] }), { mode: 0o600 });
    await assert.rejects(loadConfig(file, { B2B_API_KEY: 'env-key-0123456789' }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.deepEqual(err.problems, ['credentials.apiKey (B2B_API_KEY): applies to the object form of credentials only: with a list of credential sets, set each set\'s keys in the config file']);
      return true;
    });
  });

  it('check-config accepts three well-formed sets (exit 0)', async () => {
    const r = await problems({
      service: SERVICE,
      credentials: [set('a', { listen: { host: '127.0.0.1', port: 18081 } }), set('b', { pathPrefix: '/objects-b/' }), set('c', { headerAllow: ['10.0.0.5/32'] }), set('d')],
    });
    assert.deepEqual(r.lines, []);
    assert.equal(r.code, 0);
    // The effective config it prints redacts every set's secrets.
    for (const id of ['a', 'b', 'c', 'd']) assert.ok(!r.stdout.includes(`password-${id}-0123456789`) && !r.stdout.includes(`key-${id}-0123456789`), id);
    assert.match(r.stdout, /id: b\n\s+apiKey: "?\[REDACTED\]"?/);
  });

  it('check-config reports every per-set problem by its key and exits 2', async () => {
    const r = await problems({
      service: SERVICE,
      listen: { host: '127.0.0.1', port: 18080 },
      localization: { baseUrl: 'https://l10n.example.com' },
      credentials: [
        { id: 'a', password: 'password-a-0123456789', listen: { host: '127.0.0.1', port: 18080 } },
        { id: 'b', apiKey: 'key-b-0123456789', listen: { port: 18082 } },
        set('b', { listen: { host: '127.0.0.1', port: 18082 } }),
        set('d', { pathPrefix: '/objects' }),
        set('e', { pathPrefix: '/objects-e/' }),
        set('f', { pathPrefix: '/objects-e/x/' }),
        set('g', { pathPrefix: '/l10n/' }),
        set('h', { headerAllow: ['0.0.0.0/0'] }),
        set('i'),
        set('j'),
        set('k', { listen: { port: 18083, socket: '/run/k.sock' } }),
      ],
    });
    assert.equal(r.code, 2);
    assert.deepEqual(r.keys, [
      'credentials[0].apiKey',
      'credentials[1].password',
      'credentials[3].pathPrefix',
      'credentials[7].headerAllow[0]',
      'credentials[10].listen',
      'credentials[2].id',
      'credentials[0].listen',
      'credentials[2].listen',
      'credentials[5].pathPrefix',
      'credentials[6].pathPrefix',
      'credentials[9]',
    ], r.lines.join('\n'));
    const say = (key: string) => r.lines.find((l) => l.startsWith(`${key}:`))!;
    assert.match(say('credentials[0].apiKey'), /missing credential: set apiKey or apiKeyFile/);
    assert.match(say('credentials[2].id'), /"b" is already the id of credentials\[1\]/);
    assert.match(say('credentials[0].listen'), /127\.0\.0\.1:18080 is already the address of listen/);
    assert.match(say('credentials[2].listen'), /is already the address of credentials\[1\]\.listen/);
    assert.match(say('credentials[3].pathPrefix'), /must start and end with \//);
    assert.match(say('credentials[5].pathPrefix'), /overlaps credentials\[4\]\.pathPrefix/);
    assert.match(say('credentials[6].pathPrefix'), /overlaps the localization route/);
    assert.match(say('credentials[7].headerAllow[0]'), /lets everyone choose this set with B2B-Credential.*guard\.allowAnyone/);
    assert.match(say('credentials[9]'), /has no selector .* like credentials\[8\]/);
    assert.match(say('credentials[10].listen'), /either host and port or socket/);
    assert.ok(!r.lines.join('\n').includes('password-a-0123456789'), 'no secret in a problem');
  });

  it('refuses a malformed id and an empty list in the schema', () => {
    assert.throws(() => validateConfig({ service: SERVICE, credentials: [set('Bad Id')] }), (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith('credentials[0].id')));
    assert.throws(() => validateConfig({ service: SERVICE, credentials: [] }), ConfigError);
  });
});
