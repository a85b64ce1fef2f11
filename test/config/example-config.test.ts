import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parse } from 'yaml';
import { formatPath } from '../../src/config/walk.js';
import { ConfigError } from '../../src/shared/errors.js';
import { loadConfig } from '../../src/config/load-config.js';
import { isSection, missingFromExample, schemaKeys, undocumentedInExample } from '../helpers/example-config.js';

/**
 * config/sidecar.example.yaml documents every key of the schema, so it is checked against the
 * schema itself: it loads through the real loader, mentions every key at its place (optional ones
 * as "# key: value" lines), and every key carries a comment that names its default
 * (test/helpers/example-config.ts).
 */
const EXAMPLE = new URL('../../config/sidecar.example.yaml', import.meta.url);
const text = readFileSync(EXAMPLE, 'utf8');

const dir = mkdtempSync(join(tmpdir(), 'b2b-example-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Temp credential files standing in for /run/secrets/b2b/*, passed the way systemd and docker do. */
function credentialEnv(): NodeJS.ProcessEnv {
  const apiKeyFile = join(dir, 'api-key');
  const passwordFile = join(dir, 'password');
  writeFileSync(apiKeyFile, 'example-api-key\n');
  writeFileSync(passwordFile, 'example-password\n');
  return { B2B_API_KEY_FILE: apiKeyFile, B2B_PASSWORD_FILE: passwordFile };
}

describe('config/sidecar.example.yaml', () => {
  it('loads through the real config loader once the credential files exist', async () => {
    let config;
    try {
      config = await loadConfig(EXAMPLE.pathname, credentialEnv());
    } catch (err) {
      if (err instanceof ConfigError) assert.fail(`the example is invalid:\n${err.problems.join('\n')}`);
      throw err;
    }
    assert.equal(config.service.baseUrl, 'https://api.example.com');
    assert.equal(config.listen.host, '127.0.0.1', 'the proxy listener stays on loopback by default');
  });

  it('without the credential files it fails only on those files', async () => {
    await assert.rejects(loadConfig(EXAMPLE.pathname, {}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.ok(err.problems.length > 0);
      for (const problem of err.problems) assert.match(problem, /^credentials\.(apiKeyFile|passwordFile) /);
      return true;
    });
  });

  it('uses the documented /run/secrets/b2b paths for the credential files', () => {
    const raw = parse(text) as { credentials: Record<string, string> };
    assert.equal(raw.credentials.apiKeyFile, '/run/secrets/b2b/api-key');
    assert.equal(raw.credentials.passwordFile, '/run/secrets/b2b/password');
    assert.equal(raw.credentials.apiKey, undefined, 'inline secrets only as commented-out alternatives');
    assert.equal(raw.credentials.password, undefined, 'inline secrets only as commented-out alternatives');
  });

  it('mentions every schema key at its place, set or as a "# key:" line', () => {
    assert.deepEqual(missingFromExample(text), [], 'schema keys missing from config/sidecar.example.yaml');
  });

  it('documents every key in the comment above it, naming the default where there is one', () => {
    assert.deepEqual(undocumentedInExample(text), []);
  });

  it('sets each key it spells out to the schema default, except the documented choices', async () => {
    // Values the example deliberately sets to something other than the default (or that have none).
    const chosen = new Set(['service.baseUrl', 'credentials.apiKeyFile', 'credentials.passwordFile']);
    const raw = parse(text) as unknown;
    const differing: string[] = [];
    for (const { path, node } of schemaKeys()) {
      if (path.some((s) => typeof s === 'number') || isSection(node)) continue;
      let value: unknown = raw;
      for (const segment of path) value = (value as Record<string, unknown> | undefined)?.[segment as string];
      const key = formatPath(path);
      if (value === undefined || chosen.has(key)) continue;
      if (JSON.stringify(value) !== JSON.stringify(node.default)) differing.push(`${key}: ${JSON.stringify(value)} ≠ default ${JSON.stringify(node.default)}`);
    }
    assert.deepEqual(differing, []);
  });
});
