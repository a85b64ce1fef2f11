import { singleCredentials } from '../helpers/single-credentials.js';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DEFAULT_ATTACH } from '../../src/config/schema.js';
import { redactConfig, validateConfig } from '../../src/config/validate-config.js';
import { schemaAt, walkProperties } from '../../src/config/walk.js';
import { MAX_TIMER_MS } from '../../src/shared/clock.js';
import { problemsOf } from '../helpers/attach-problems.js';

type Raw = Record<string, any>;

/** The smallest valid config; each test changes one thing. */
function base(): Raw {
  return { service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'key-1234', password: 'pass-5678' } };
}

function withChange(change: (c: Raw) => void): string[] {
  const c = base();
  change(c);
  return problemsOf(c);
}

/** Sets `path` in `c`, creating sections on the way; a new section gets its required keys that have no default. */
function setAt(c: Raw, path: readonly string[], value: unknown): void {
  let node = c;
  for (const [i, segment] of path.slice(0, -1).entries()) {
    if (node[segment] === undefined) node[segment] = { ...requiredSamples(path.slice(0, i + 1)) };
    node = node[segment];
  }
  node[path[path.length - 1]!] = value;
}

/** Sample values for required keys without a default: only localization.baseUrl today. */
function requiredSamples(section: readonly string[]): Raw {
  const samples: Raw = {};
  const node = schemaAt(section);
  for (const key of node?.required ?? []) {
    const child = node!.properties![key]!;
    if (child.default !== undefined) continue;
    assert.ok(/Url$/.test(key), `${[...section, key].join('.')} is required without a default: give it a sample value in requiredSamples() in test/config/validate-config.test.ts`);
    samples[key] = 'https://example.test';
  }
  return samples;
}

/** Every *Ms key, and every *Seconds key (each becomes a timer), with its schema maximum and the 2^31-1 ms bound in its unit. */
function timedKeys(): Array<{ key: string; path: string[]; unit: 'ms' | 's'; maximum: number | undefined; bound: number }> {
  const found: ReturnType<typeof timedKeys> = [];
  walkProperties((path, node) => {
    if (path.some((s) => typeof s === 'number')) return;
    const name = String(path[path.length - 1]);
    const unit = name.endsWith('Ms') ? 'ms' : name.endsWith('Seconds') ? 's' : undefined;
    if (unit === undefined) return;
    const { maximum } = node as { maximum?: number };
    found.push({ key: path.join('.'), path: path as string[], unit, maximum, bound: unit === 'ms' ? MAX_TIMER_MS : Math.floor(MAX_TIMER_MS / 1000) });
  });
  return found;
}

const tmp = mkdtempSync(join(tmpdir(), 'b2b-config-'));

describe('validateConfig: defaults', () => {
  it('fills every default, including the default attachments', () => {
    const config = validateConfig(base());
    assert.deepEqual(config.token.attach, DEFAULT_ATTACH);
    assert.deepEqual(config.token.attach.map((a) => [a.in, a.name, a.value]), [
      ['header', 'Authorization', 'Bearer {token}'],
      ['header', 'ApiKey', '{apiKey}'],
    ]);
    assert.deepEqual(config.listen, { host: '127.0.0.1', port: 8080, socketMode: '0660' });
    assert.equal(config.admin.port, 9464);
    assert.deepEqual(config.guard.allow, ['127.0.0.1/32', '::1/128']);
    assert.equal(config.log.level, 'info');
    assert.equal(config.service.allowInsecureHttp, false);
    assert.equal(config.localization, undefined);
  });

  it('does not modify its input and does not share default objects between calls', () => {
    const raw = base();
    const a = validateConfig(raw);
    assert.deepEqual(raw, base());
    a.token.attach.push({ in: 'query', name: 'x', value: 'y' });
    assert.equal(validateConfig(base()).token.attach.length, 2);
  });

  it('accepts a base URL with a path, and http:// only with allowInsecureHttp', () => {
    assert.deepEqual(withChange((c) => { c.service.baseUrl = 'https://api.example.com/b2b/v1'; }), []);
    assert.deepEqual(withChange((c) => { c.service = { baseUrl: 'http://127.0.0.1:1234', allowInsecureHttp: true }; }), []);
  });
});

describe('validateConfig: problems', () => {
  it('reports schema violations with the key and its env var', () => {
    assert.deepEqual(withChange((c) => { c.listen = { port: 70000 }; }), ['listen.port (B2B_LISTEN_PORT): must be <= 65535']);
    assert.deepEqual(withChange((c) => { c.log = { level: 'loud' }; }), ['log.level (B2B_LOG_LEVEL): must be one of: error, warn, info, debug']);
    assert.deepEqual(withChange((c) => { c.proxy = { maxSockets: 'many' }; }), ['proxy.maxSockets: must be integer']);
  });

  it('names unknown keys by their dotted path', () => {
    assert.deepEqual(withChange((c) => { c.credentials.apikey = 'x'; c.extra = 1; }), [
      'extra: is not a known key',
      'credentials.apikey: is not a known key (did you mean apiKey?)',
    ]);
  });

  it('suggests the nearest sibling key within two edits (swapped, missing or doubled letters), nothing further away', () => {
    assert.deepEqual(withChange((c) => { c.tokne = {}; c.service.timoutMs = 5; c.guard = { alllow: [] }; c.zzzzzz = 1; }), [
      'tokne: is not a known key (did you mean token?)',
      'zzzzzz: is not a known key',
      'service.timoutMs: is not a known key (did you mean timeoutMs?)',
      'guard.alllow: is not a known key (did you mean allow?)',
    ]);
  });

  it('reports a missing service as its missing baseUrl with the env var', () => {
    assert.deepEqual(problemsOf({ credentials: base().credentials }), ['service.baseUrl (B2B_BASE_URL): is required']);
  });

  it('rejects http://, user info, query, fragment and non-URLs in service.baseUrl', () => {
    const cases: Array<[string, RegExp]> = [
      ['http://api.example.com', /uses http:\/\//],
      ['https://user:pw@api.example.com', /user:password@/],
      ['https://api.example.com/?a=1', /query string/],
      ['https://api.example.com/#x', /fragment/],
      ['api.example.com', /https:\/\//],
      ['/relative', /absolute URL/],
      ['ftp://api.example.com', /must be an https:\/\/ URL/],
    ];
    for (const [url, reason] of cases) {
      const problems = withChange((c) => { c.service.baseUrl = url; });
      assert.equal(problems.length, 1, `${url}: ${problems.join('; ')}`);
      assert.ok(problems[0]!.startsWith('service.baseUrl (B2B_BASE_URL): '), problems[0]);
      assert.match(problems[0]!, reason);
    }
    assert.ok(!withChange((c) => { c.service.baseUrl = 'https://user:secret-pw@x.example'; }).join().includes('secret-pw'));
  });

  it('checks localization.baseUrl with its own allowInsecureHttp', () => {
    const l10n = (extra: Raw) => withChange((c) => {
      c.service.allowInsecureHttp = true;
      c.localization = { baseUrl: 'http://l10n.example', ...extra };
    });
    assert.deepEqual(l10n({}).map((p) => p.split(':')[0]), ['localization.baseUrl (B2B_L10N_BASE_URL)']);
    assert.deepEqual(l10n({ allowInsecureHttp: true }), []);
  });

  it('rejects non-canonical IPv4 spellings and host bits in CIDR lists (docs/traps.md T19)', () => {
    const problems = withChange((c) => {
      c.guard = { allow: ['127.0.0.1/32', '10.1/16', '127.1', '0177.0.0.1', '2130706433', '10.0.0.1/8', '::1/129'] };
    });
    assert.deepEqual(problems.map((p) => p.split(':')[0]), [1, 2, 3, 4, 5, 6].map((i) => `guard.allow[${i}]`));
    assert.match(problems[4]!, /host bits set \(did you mean 10\.0\.0\.0\/8\?\)/);
  });

  it('checks guard.trustedProxies and admin.allow entries by index', () => {
    const problems = withChange((c) => {
      c.guard = { trustedProxies: ['10.0.0.0/8', 'proxy.local'] };
      c.admin = { allow: ['nope'] };
    });
    assert.deepEqual(problems.map((p) => p.split(':')[0]), ['guard.trustedProxies[1]', 'admin.allow[0]']);
  });

  it('requires exactly one of each credential and its file', () => {
    const keyFile = join(tmp, 'api-key');
    writeFileSync(keyFile, 'from-file');
    assert.deepEqual(withChange((c) => { c.credentials = {}; }), [
      'credentials.apiKey (B2B_API_KEY): missing credential: set apiKey or apiKeyFile (B2B_API_KEY_FILE)',
      'credentials.password (B2B_PASSWORD): missing credential: set password or passwordFile (B2B_PASSWORD_FILE)',
    ]);
    assert.deepEqual(withChange((c) => { c.credentials.apiKeyFile = keyFile; }), [
      'credentials.apiKey (B2B_API_KEY): set only one of apiKey and apiKeyFile (B2B_API_KEY_FILE)',
    ]);
    assert.deepEqual(withChange((c) => { c.credentials = { apiKeyFile: keyFile, password: 'p' }; }), []);
    assert.deepEqual(withChange((c) => { c.localization = { baseUrl: 'https://l.example', token: 't', tokenFile: keyFile }; }), [
      'localization.token (B2B_L10N_TOKEN): set only one of token and tokenFile (B2B_L10N_TOKEN_FILE)',
    ]);
  });

  it('reports which file is missing, not a file, or not a PEM CA', () => {
    const notPem = join(tmp, 'not-ca.pem');
    writeFileSync(notPem, 'hello');
    const problems = withChange((c) => {
      c.service.caFile = join(tmp, 'missing-ca.pem');
      c.credentials = { apiKeyFile: tmp, passwordFile: join(tmp, 'missing-password') };
      c.localization = { baseUrl: 'https://l.example', caFile: notPem };
      c.token = { file: join(tmp, 'no-such-dir', 'token') };
    });
    assert.deepEqual(problems.map((p) => p.split(': ')[0]), [
      'service.caFile (B2B_CA_FILE)',
      'credentials.apiKeyFile (B2B_API_KEY_FILE)',
      'credentials.passwordFile (B2B_PASSWORD_FILE)',
      'localization.caFile (B2B_L10N_CA_FILE)',
      'token.file (B2B_TOKEN_FILE)',
    ]);
    assert.match(problems[0]!, /does not exist/);
    assert.match(problems[1]!, /not a regular file/);
    assert.match(problems[3]!, /no PEM certificate/);
  });

  it('checks attach templates, header names and duplicates', () => {
    const problems = withChange((c) => {
      c.token = {
        attach: [
          { in: 'header', name: 'Authorization', value: 'Bearer {token}' },
          { in: 'header', name: 'authorization', value: '{apiKey}' },
          { in: 'query', name: 'obj', value: '{rkObjectId}' },
          { in: 'header', name: 'X-Key', value: '{apikey}' },
          { in: 'header', name: 'Bad Name', value: 'x' },
          { in: 'header', name: 'Host', value: 'x' },
          { in: 'header', name: 'Content-Length', value: '1' },
          { in: 'header', name: 'Transfer-Encoding', value: 'chunked' },
          { in: 'header', name: 'Connection', value: 'close' },
          { in: 'query', name: 'a', value: '1' },
          { in: 'query', name: 'A', value: '1' },
          { in: 'header', name: 'X-Split', value: 'a\r\nInjected: 1' },
        ],
      };
    });
    assert.deepEqual(problems.map((p) => p.split(': ')[0]), [
      'token.attach[1].name',
      'token.attach[2].value',
      'token.attach[3].value',
      'token.attach[4].name',
      'token.attach[5].name',
      'token.attach[6].name',
      'token.attach[7].name',
      'token.attach[8].name',
      'token.attach[11].value',
    ]);
    assert.match(problems[0]!, /duplicates token\.attach\[0\]/);
    assert.match(problems[1]!, /credentials\.rkObjectId \(B2B_RK_OBJECT_ID\) is not set/);
    assert.match(problems[2]!, /unknown placeholder \{apikey\}/);
    assert.deepEqual(withChange((c) => {
      c.credentials.rkObjectId = 'obj-1';
      c.token = { attach: [{ in: 'query', name: 'rkObjectId', value: '{rkObjectId}' }, { in: 'cookie', name: 'sid', value: '{token}' }] };
    }), []);
  });

  it('rejects listen and admin on the same address, but not both on port 0', () => {
    assert.deepEqual(withChange((c) => { c.listen = { port: 9000 }; c.admin = { port: 9000 }; }).map((p) => p.split(': ')[0]), [
      'admin.port (B2B_ADMIN_PORT)',
    ]);
    assert.equal(withChange((c) => { c.listen = { port: 9000, host: '0.0.0.0' }; c.admin = { port: 9000 }; }).length, 1);
    assert.deepEqual(withChange((c) => { c.listen = { port: 0 }; c.admin = { port: 0 }; }), []);
    assert.deepEqual(withChange((c) => { c.listen = { port: 9000, host: '127.0.0.1' }; c.admin = { port: 9000, host: '10.0.0.5' }; }), []);
  });

  it('checks localization.watch slugs', () => {
    const problems = withChange((c) => {
      c.localization = { baseUrl: 'https://l.example', watch: ['app/ui/en', 'app/ui', 'app/../en', 'app/ui/e n', 'app/./en', 'app/ui/en'] };
    });
    assert.deepEqual(problems.map((p) => p.split(': ')[0]), [1, 2, 3, 4, 5].map((i) => `localization.watch[${i}]`));
  });

  it('accepts category paths in localization.watch, plain or %2F-encoded, and finds a duplicate across the two forms', () => {
    const problems = withChange((c) => {
      c.localization = { baseUrl: 'https://l.example', watch: ['app/docs/ui/en', 'app/a/b/ui/de', 'app/docs%2Fui/en', 'app/docs%2F..%2Fx/en'] };
    });
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.match(problems[0]!, /^localization\.watch\[2\]: "app\/docs%2Fui\/en" is listed twice$/);
    assert.match(problems[1]!, /^localization\.watch\[3\]: .*is not a slug/);
  });

  it('requires a sane renewal window', () => {
    assert.match(withChange((c) => { c.token = { renewAt: 0.9, maxLifetimeSeconds: 2 }; }).join(), /^token\.renewAt: leaves only 0\.20 s/);
    assert.match(withChange((c) => { c.token = { renewAt: 0.1, maxLifetimeSeconds: 5 }; }).join(), /^token\.renewAt: renews 0\.50 s after issue/);
    assert.deepEqual(withChange((c) => { c.token = { maxLifetimeSeconds: 2 }; }), []);
  });

  it('a renewAt outside its range gets the range and, for a percentage, the fraction it meant; no window arithmetic on it', () => {
    assert.deepEqual(withChange((c) => { c.token = { renewAt: 66 }; }), [
      'token.renewAt: must be <= 0.9',
      'token.renewAt: is a fraction of the lifetime, not a percentage: 0.66 renews at 66 %',
    ]);
    assert.deepEqual(withChange((c) => { c.token = { renewAt: 0.5, maxLifetimeSeconds: 5000 }; }), ['token.maxLifetimeSeconds: must be <= 900']);
  });

  it('tokenTimeoutMs above 2^31-1 is a config error', () => {
    // Node fires a longer timer after 1 ms (docs/traps.md T15): every gentoken request would time out at once.
    assert.deepEqual(withChange((c) => { c.service.tokenTimeoutMs = 2 ** 31; }), [
      'service.tokenTimeoutMs: must be <= 2147483647',
    ]);
    assert.deepEqual(withChange((c) => { c.service.tokenTimeoutMs = 2 ** 31 - 1; }), []);
  });

  it('bounds every millisecond setting, and every seconds setting turned into a timer, by 2^31-1 ms', () => {
    // Found by walking the schema: a new *Ms or *Seconds key is checked without editing this test.
    const timed = timedKeys();
    assert.ok(timed.length >= 11, `found only ${timed.map((t) => t.key).join(', ')}`);
    const unbounded = timed.filter(({ maximum, bound }) => maximum === undefined || maximum > bound);
    assert.deepEqual(unbounded.map(({ key, unit }) => `${key}: add \`...${unit === 'ms' ? 'millis' : 'seconds'}\` (maximum ${unit === 'ms' ? 'MAX_TIMER_MS' : 'Math.floor(MAX_TIMER_MS / 1000)'}) to its entry in src/config/schema.ts: Node fires a longer timer after 1 ms (docs/traps.md T15)`), []);
    const atMaximum = (c: Raw): void => {
      for (const { path, maximum } of timed) setAt(c, path, maximum!);
    };
    assert.deepEqual(withChange(atMaximum), [], 'every timer at its maximum at once is a valid config');
    for (const { key, path, maximum } of timed) {
      const over = withChange((c) => { atMaximum(c); setAt(c, path, maximum! + 1); });
      assert.deepEqual([...new Set(over.map((p) => p.split(/[ :]/)[0]))], [key], `${key} one above its maximum is refused, naming only ${key}`);
    }
  });

  it('caps token.maxLifetimeSeconds at 900: the API requires renewal at least every 15 minutes', () => {
    assert.deepEqual(withChange((c) => { c.token = { maxLifetimeSeconds: 86_400 }; }), [
      'token.maxLifetimeSeconds: must be <= 900',
    ]);
    assert.deepEqual(withChange((c) => { c.token = { maxLifetimeSeconds: 901 }; }).length, 1);
    assert.deepEqual(withChange((c) => { c.token = { maxLifetimeSeconds: 900 }; }), []);
  });

  it('checks inline credentials the way the credential store does at start, never echoing them', () => {
    const problems = withChange((c) => {
      c.credentials.apiKey = 'key with space-31';
      c.localization = { baseUrl: 'https://l.example', token: 'l10n-tok\r\nen-32' };
    });
    assert.deepEqual(problems.map((p) => p.split(': ')[0]), ['credentials.apiKey (B2B_API_KEY)', 'localization.token (B2B_L10N_TOKEN)']);
    assert.ok(!problems.join().includes('space-31') && !problems.join().includes('en-32'));
    assert.deepEqual(withChange((c) => { c.credentials.password = 'a password may have spaces and ümlauts'; }), []);
  });

  it('reports an empty ...File by its size, without reading it', () => {
    const empty = join(tmp, 'empty-api-key');
    writeFileSync(empty, '');
    const problems = withChange((c) => { c.credentials = { apiKeyFile: empty, password: 'p-1' }; });
    assert.deepEqual(problems, [`credentials.apiKeyFile (B2B_API_KEY_FILE): ${empty} is empty`]);
  });

  it('reports every problem at once, each naming its key', () => {
    const problems = withChange((c) => {
      c.service.baseUrl = 'http://api.example.com';
      c.guard = { allow: ['10.1/16'] };
      c.listen = { port: 'abc' };
      delete c.credentials.password;
      c.log = { level: 'verbose' };
    });
    assert.equal(problems.length, 5, problems.join('\n'));
    for (const key of ['service.baseUrl (B2B_BASE_URL)', 'guard.allow[0]', 'listen.port (B2B_LISTEN_PORT)', 'credentials.password (B2B_PASSWORD)', 'log.level (B2B_LOG_LEVEL)']) {
      assert.equal(problems.filter((p) => p.startsWith(`${key}: `)).length, 1, `${key} in\n${problems.join('\n')}`);
    }
  });
});

describe('redactConfig', () => {
  it('replaces every x-secret value and leaves the rest, without touching the config', () => {
    const config = validateConfig({ ...base(), localization: { baseUrl: 'https://l.example', token: 'l10n-token-9' } });
    const redacted = redactConfig(config) as Raw;
    assert.equal(redacted.credentials.apiKey, '[REDACTED]');
    assert.equal(redacted.credentials.password, '[REDACTED]');
    assert.equal(redacted.localization.token, '[REDACTED]');
    assert.equal(redacted.service.baseUrl, 'https://api.example.com');
    assert.deepEqual(redacted.token.attach, DEFAULT_ATTACH);
    for (const secret of ['key-1234', 'pass-5678', 'l10n-token-9']) assert.ok(!JSON.stringify(redacted).includes(secret));
    assert.equal(singleCredentials(config).apiKey, 'key-1234');
  });
});

describe('ConfigSchema itself', () => {
  it('is a valid JSON Schema (the runtime validator skips this check to start faster)', async () => {
    const { Ajv } = await import('ajv');
    const { ConfigSchema } = await import('../../src/config/schema.js');
    const { addAnnotationKeywords } = await import('../../src/config/validate-config.js');
    const ajv = addAnnotationKeywords(new Ajv({ strict: true, allErrors: true, allowUnionTypes: true }));
    assert.equal(ajv.validateSchema(ConfigSchema), true, JSON.stringify(ajv.errors));
    assert.doesNotThrow(() => ajv.compile(ConfigSchema));
  });
});
