import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { ConfigSchema, type Config, type LocalizationConfig } from '../../src/config/schema.js';
import { localizationSection, serviceSection } from '../../src/config/upstream-sections.js';
import { renderConfigTable } from '../../src/config/readme-table.js';
import { AJV_OPTIONS, addAnnotationKeywords } from '../../src/config/validate-config.js';
import { envBindings, formatPath, rereadFileKeys, schemaAt, secretFileKeys, type SchemaNode } from '../../src/config/walk.js';
import { envNameOf } from '../../src/shared/env-names.js';
import { UPSTREAM_KEYS, UPSTREAM_NAMES, type UpstreamKeys, type UpstreamSettings, type UpstreamSettingsOf } from '../../src/shared/upstream-keys.js';
import type { EgressSettings } from '../../src/upstream/egress-settings.js';
import { missingFromExample, undocumentedInExample } from '../helpers/example-config.js';

/**
 * The keys of an upstream are declared once (src/shared/upstream-keys.ts). These tests build the
 * schema from the real declaration plus one key, as a developer adding a setting would, and show
 * the key reaching every place that derives from it: the schema of both sections with its default,
 * the settings type, the env variable list, the README table and the example's check.
 */
const EXAMPLE = readFileSync(new URL('../../config/sidecar.example.yaml', import.meta.url), 'utf8');

const WITH_EXTRA = {
  ...UPSTREAM_KEYS,
  connectRetries: {
    env: true,
    schema: (s, marks) => Type.Integer({ minimum: 0, maximum: 5, default: s === 'service' ? 2 : 1, description: `Times a refused connection to the ${s} server is tried again.`, ...marks }),
  },
} satisfies UpstreamKeys;

/** The real schema with both upstream sections built from WITH_EXTRA. */
const extended = {
  ...ConfigSchema,
  properties: { ...ConfigSchema.properties, service: serviceSection(WITH_EXTRA), localization: Type.Optional(localizationSection(WITH_EXTRA)) },
} as unknown as SchemaNode;

// Compile-time: the settings type follows the declaration. A key added to it is in the type (and a
// settings object without it does not type); every declared key is in each section's config type.
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
const typed: {
  extraInSettings: Equal<UpstreamSettingsOf<typeof WITH_EXTRA>['connectRetries'], number>;
  extraInSection: Equal<Static<ReturnType<typeof serviceSection<typeof WITH_EXTRA>>>['connectRetries'], number>;
  declaredIsSettings: Equal<keyof UpstreamSettings, keyof typeof UPSTREAM_KEYS>;
  serviceHasEvery: Config['service'] extends UpstreamSettings ? true : false;
  localizationHasEvery: LocalizationConfig extends UpstreamSettings ? true : false;
  egressFromDeclaration: Equal<EgressSettings['certFile'], UpstreamSettings['certFile']>;
} = { extraInSettings: true, extraInSection: true, declaredIsSettings: true, serviceHasEvery: true, localizationHasEvery: true, egressFromDeclaration: true };
// @ts-expect-error connectRetries is declared, so settings without it are not UpstreamSettings
const withoutExtra: UpstreamSettingsOf<typeof WITH_EXTRA> = { baseUrl: 'https://x.example', allowInsecureHttp: false, timeoutMs: 1000 };

describe('the upstream declaration', () => {
  it('is where the keys of both upstream sections come from', () => {
    assert.ok(Object.values(typed).every(Boolean));
    assert.ok(withoutExtra);
    for (const section of UPSTREAM_NAMES) {
      const properties = Object.keys(schemaAt([section])?.properties ?? {});
      assert.deepEqual(properties.slice(0, Object.keys(UPSTREAM_KEYS).length), Object.keys(UPSTREAM_KEYS), `${section}: the declared keys, first and in order`);
    }
  });

  it('puts a key added to it into the schema of both sections, with its default and env name', () => {
    assert.deepEqual(
      UPSTREAM_NAMES.map((s) => { const node = schemaAt([s, 'connectRetries'], extended); return [node?.type, node?.default, node?.['x-env']]; }),
      [['integer', 2, 'B2B_CONNECT_RETRIES'], ['integer', 1, 'B2B_L10N_CONNECT_RETRIES']],
    );
    // The validator built from that schema fills the default in and bounds the value.
    const validate = addAnnotationKeywords(new Ajv({ ...AJV_OPTIONS })).compile(extended);
    const config = { service: { baseUrl: 'https://api.example.com' }, localization: { baseUrl: 'https://l10n.example.com', connectRetries: 9 } } as Record<string, Record<string, unknown>>;
    assert.equal(validate(config), false);
    assert.deepEqual(validate.errors?.map((e) => e.instancePath), ['/localization/connectRetries']);
    assert.equal(config.service!.connectRetries, 2);
  });

  it('gives its flags to both sections: secret files are warned about, re-read files listed on SIGHUP', () => {
    const files = { proxyAuthFile: '/p', certFile: '/c', keyFile: '/k', keyPassphraseFile: '/kp' };
    const config = { service: files, credentials: { passwordFile: '/pw' }, localization: { ...files, tokenFile: '/t' } };
    assert.deepEqual(secretFileKeys(config).map(([key]) => key), [
      'service.proxyAuthFile', 'service.keyFile', 'service.keyPassphraseFile', 'credentials.passwordFile',
      'localization.proxyAuthFile', 'localization.keyFile', 'localization.keyPassphraseFile', 'localization.tokenFile',
    ], 'the certificate is public; its key, passphrase and the proxy password are not');
    assert.deepEqual(rereadFileKeys(config).filter((k) => /certFile/.test(k)), ['service.certFile', 'localization.certFile']);
  });

  it('puts a key added to it into the env variable list, the README table and the example check', () => {
    const envs = envBindings(extended).map((b) => b.env);
    assert.ok(envs.includes('B2B_CONNECT_RETRIES') && envs.includes('B2B_L10N_CONNECT_RETRIES'), envs.join(' '));
    const table = renderConfigTable(extended);
    assert.match(table, /^\| `service\.connectRetries` \| `B2B_CONNECT_RETRIES` \| `2` \| restart \| Times a refused connection to the service server is tried again\. \|$/m);
    assert.match(table, /^\| `localization\.connectRetries` \| `B2B_L10N_CONNECT_RETRIES` \| `1` \| restart \|/m);
    // The example is checked against the schema: the new key is reported at its place, nothing else.
    const missing = missingFromExample(EXAMPLE, extended);
    assert.deepEqual(missing.map((m) => m.split(':')[0]), ['service.connectRetries', 'localization.connectRetries']);
    assert.match(missing[0]!, /add under `service:`.*\n {2}# Times a refused connection .* Default 2\. env B2B_CONNECT_RETRIES\n {2}connectRetries: 2/);
    // Added as the failure says, both checks pass.
    const added = EXAMPLE
      .replace('\n  tokenTimeoutMs: 10000\n', '\n  tokenTimeoutMs: 10000\n  # Times a refused connection is tried again. Default 2. env B2B_CONNECT_RETRIES\n  connectRetries: 2\n')
      .replace('\n  # timeoutMs: 10000\n', '\n  # timeoutMs: 10000\n  # Times a refused connection is tried again. Default 1. env B2B_L10N_CONNECT_RETRIES\n  # connectRetries: 1\n');
    assert.deepEqual([...missingFromExample(added, extended), ...undocumentedInExample(added, extended)], []);
    assert.deepEqual([...missingFromExample(EXAMPLE), ...undocumentedInExample(EXAMPLE)], [], 'the real example matches the real declaration');
  });
});

describe('the environment variable naming rule', () => {
  it('gives every env name of the schema (no exceptions)', () => {
    // Names that break the rule, each with its reason; none today. Keep it empty: rename nothing,
    // but a new name that cannot follow the rule is listed here and in the README.
    const exceptions = new Map<string, string>();
    const off = envBindings().filter(({ path, env }) => env !== envNameOf(path.map(String)) && !exceptions.has(env))
      .map(({ path, env }) => `${formatPath(path)}: ${env}, the rule says ${envNameOf(path.map(String))}`);
    assert.deepEqual(off, []);
  });

  it('reproduces the established names exactly (they are external contracts)', () => {
    const established = {
      'listen.port': 'B2B_LISTEN_PORT', 'listen.socket': 'B2B_LISTEN_SOCKET', 'admin.port': 'B2B_ADMIN_PORT',
      'service.baseUrl': 'B2B_BASE_URL', 'service.caFile': 'B2B_CA_FILE',
      'credentials.apiKey': 'B2B_API_KEY', 'credentials.apiKeyFile': 'B2B_API_KEY_FILE', 'credentials.password': 'B2B_PASSWORD',
      'credentials.passwordFile': 'B2B_PASSWORD_FILE', 'credentials.rkObjectId': 'B2B_RK_OBJECT_ID', 'token.file': 'B2B_TOKEN_FILE',
      'log.level': 'B2B_LOG_LEVEL', 'log.requests': 'B2B_LOG_REQUESTS',
      'localization.baseUrl': 'B2B_L10N_BASE_URL', 'localization.token': 'B2B_L10N_TOKEN', 'localization.tokenFile': 'B2B_L10N_TOKEN_FILE',
    };
    for (const [key, env] of Object.entries(established)) assert.equal(envNameOf(key.split('.')), env, key);
    const bound = Object.fromEntries(envBindings().map(({ path, env }) => [formatPath(path), env]));
    for (const [key, env] of Object.entries(established)) assert.equal(bound[key], env, `${key} keeps ${env}`);
  });
});
