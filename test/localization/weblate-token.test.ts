import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { localizationRoute } from '../../src/localization/route-settings.js';
import { createTokenSource } from '../../src/localization/weblate-token.js';
import { ConfigError } from '../../src/shared/errors.js';
import { SecretSet } from '../../src/shared/secrets.js';
import { testTls } from '../helpers/tls.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'l10n-token-'));
}

/** Waits (bounded) until `check` holds; file events arrive asynchronously. */
async function eventually(check: () => boolean): Promise<void> {
  for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(check(), 'condition not reached');
}

describe('localization token source', () => {
  it('returns undefined when no token is configured', () => {
    const source = createTokenSource({}, { secrets: new SecretSet() });
    assert.equal(source(), undefined);
  });

  it('uses the inline token and registers it as a secret', () => {
    const secrets = new SecretSet();
    const source = createTokenSource({ token: 'wlu_inline1234' }, { secrets });
    assert.equal(source(), 'wlu_inline1234');
    assert.ok(secrets.has('wlu_inline1234'));
  });

  it('reads tokenFile without its trailing newline and re-reads it on demand', async () => {
    const dir = tempDir();
    const file = join(dir, 'token');
    writeFileSync(file, 'wlu_first1234\n');
    const secrets = new SecretSet();
    const source = createTokenSource({ tokenFile: file }, { secrets, watch: false });
    try {
      assert.equal(source(), 'wlu_first1234');
      writeFileSync(file, 'wlu_second5678\r\n');
      await source.reload();
      assert.equal(source(), 'wlu_second5678');
      assert.ok(secrets.has('wlu_first1234') && secrets.has('wlu_second5678'));
    } finally {
      source.close();
      rmSync(dir, { recursive: true });
    }
  });

  it('picks up a replaced token file by itself', async () => {
    const dir = tempDir();
    const file = join(dir, 'token');
    writeFileSync(file, 'wlu_before1234\n');
    const source = createTokenSource({ tokenFile: file }, { secrets: new SecretSet() });
    try {
      writeFileSync(join(dir, 'token.new'), 'wlu_after5678\n');
      renameSync(join(dir, 'token.new'), file); // atomic replace, as secret managers do
      await eventually(() => source() === 'wlu_after5678');
    } finally {
      source.close();
      rmSync(dir, { recursive: true });
    }
  });

  it('keeps the old token and reports when a re-read finds a bad file', async () => {
    const dir = tempDir();
    const file = join(dir, 'token');
    writeFileSync(file, 'wlu_good1234');
    const errors: Error[] = [];
    const source = createTokenSource({ tokenFile: file }, { secrets: new SecretSet(), watch: false, onError: (e) => errors.push(e) });
    try {
      writeFileSync(file, 'two words\n');
      await source.reload();
      assert.equal(source(), 'wlu_good1234');
      assert.match(errors[0]?.message ?? '', /spaces, control or non-ASCII/);
      assert.ok(!errors[0]?.message.includes('two words'));
    } finally {
      source.close();
      rmSync(dir, { recursive: true });
    }
  });

  it('fails at start with a config error naming the key on a missing file or a token with a line break inside', () => {
    const configError = (key: string, reason: RegExp) => (err: unknown) =>
      err instanceof ConfigError && err.problems.length === 1 && err.problems[0]!.startsWith(key) && reason.test(err.problems[0]!) && !err.message.includes('wlu_a');
    assert.throws(() => createTokenSource({ tokenFile: '/nonexistent/l10n-token' }, { secrets: new SecretSet() }),
      configError('localization.tokenFile (B2B_L10N_TOKEN_FILE)', /does not exist/));
    assert.throws(() => createTokenSource({ token: 'wlu_a\r\nX-Evil: 1' }, { secrets: new SecretSet() }),
      configError('localization.token (B2B_L10N_TOKEN)', /control/));
  });
});

describe('localization route description', () => {
  it('carries the prefix, target and the localization token only (the CA is the upstream\'s)', async () => {
    const tls = await testTls();
    const route = localizationRoute({
      baseUrl: 'https://weblate.example.com/', caFile: tls.caFile, token: 'wlu_route1234', allowInsecureHttp: false,
      pathPrefix: '/l10n', watch: [], pollIntervalSeconds: 300, timeoutMs: 10000,
    }, { secrets: new SecretSet() });
    try {
      assert.equal(route.pathPrefix, '/l10n');
      assert.equal(route.targetBaseUrl, 'https://weblate.example.com');
      assert.ok(!('ca' in route));
      assert.equal(route.authorizationHeader(), 'Token wlu_route1234');
    } finally {
      route.close();
    }
  });
});
