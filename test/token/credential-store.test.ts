import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createCredentialStore } from '../../src/token/credential-store.js';
import { ConfigError } from '../../src/shared/errors.js';
import { SecretSet } from '../../src/shared/secrets.js';
import { captureLogger } from '../helpers/gentoken-server.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'b2b-creds-'));
}

/** A Kubernetes-style secret volume: files are symlinks through `..data` to a versioned dir. */
function k8sVolume(dir: string, values: Record<string, string>, version: number): void {
  const real = join(dir, `..v${version}`);
  mkdirSync(real);
  for (const [name, value] of Object.entries(values)) writeFileSync(join(real, name), value);
  symlinkSync(`..v${version}`, join(dir, '..data_tmp'));
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  if (version === 1) for (const name of Object.keys(values)) symlinkSync(join('..data', name), join(dir, name));
}

describe('credential store', () => {
  it('reads files, trims trailing newlines and registers every value as a secret', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'key'), 'key-1234\r\n');
    writeFileSync(join(dir, 'pw'), 'pass word \n\n');
    const secrets = new SecretSet();
    const { logger } = captureLogger();
    const store = await createCredentialStore(
      { apiKeyFile: join(dir, 'key'), passwordFile: join(dir, 'pw'), rkObjectId: 'obj-7' },
      { logger, secrets },
    );
    assert.deepEqual(store.current(), { apiKey: 'key-1234', password: 'pass word', rkObjectId: 'obj-7', version: 1 });
    assert.ok(secrets.has('key-1234') && secrets.has('pass word'));
    store.close();
    rmSync(dir, { recursive: true });
  });

  it('uses inline values, which never change', async () => {
    const { logger } = captureLogger();
    const store = await createCredentialStore({ apiKey: 'inline-key', password: 'inline-pw' }, { logger, secrets: new SecretSet() });
    assert.equal(store.current().apiKey, 'inline-key');
    assert.equal(await store.reload(), false);
    assert.equal(store.current().version, 1);
  });

  it('names the key of an empty or missing credential', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'pw'), '\n');
    const { logger } = captureLogger();
    const err = await createCredentialStore({ passwordFile: join(dir, 'pw') }, { logger, secrets: new SecretSet() }).catch((e: unknown) => e);
    assert.ok(err instanceof ConfigError);
    assert.deepEqual(err.problems, [
      'credentials.apiKey (B2B_API_KEY): missing (set credentials.apiKey or credentials.apiKeyFile)',
      `credentials.passwordFile (B2B_PASSWORD_FILE): ${join(dir, 'pw')} holds only whitespace`,
    ]);
    rmSync(dir, { recursive: true });
  });

  it('refuses an ApiKey that cannot be sent as a header', async () => {
    const { logger } = captureLogger();
    const err = await createCredentialStore({ apiKey: 'a b\u00e9', password: 'pw' }, { logger, secrets: new SecretSet() }).catch((e: unknown) => e);
    assert.ok(err instanceof ConfigError);
    assert.match(err.problems[0]!, /^credentials\.apiKey \(B2B_API_KEY\): must be visible ASCII/);
  });

  it('reload reports a change once and bumps the version; a broken file keeps the old values', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'key'), 'key-1');
    writeFileSync(join(dir, 'pw'), 'pw-1111');
    const secrets = new SecretSet();
    const log = captureLogger();
    const store = await createCredentialStore({ apiKeyFile: join(dir, 'key'), passwordFile: join(dir, 'pw') }, { logger: log.logger, secrets });
    assert.equal(await store.reload(), false);
    writeFileSync(join(dir, 'pw'), 'pw-2222\n');
    assert.equal(await store.reload(), true);
    assert.equal(await store.reload(), false);
    assert.deepEqual(store.current(), { apiKey: 'key-1', password: 'pw-2222', version: 2 });
    assert.ok(secrets.has('pw-2222'));
    writeFileSync(join(dir, 'pw'), '');
    assert.equal(await store.reload(), false);
    assert.equal(store.current().password, 'pw-2222');
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(log.text().includes('keeping the current credentials'));
    for (const s of ['key-1', 'pw-1111', 'pw-2222']) assert.ok(!log.text().includes(s), `log leaks ${s}`);
    store.close();
    rmSync(dir, { recursive: true });
  });

  it('runs one re-read at a time (later asks share it) and reports one still running after 10 s as stuck', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'key'), 'key-1');
    writeFileSync(join(dir, 'pw'), 'pw-1111');
    let now = 0;
    const store = await createCredentialStore({ apiKeyFile: join(dir, 'key'), passwordFile: join(dir, 'pw') }, { logger: captureLogger().logger, secrets: new SecretSet(), now: () => now });
    writeFileSync(join(dir, 'pw'), 'pw-2222');
    const first = store.reload();
    const second = store.reload(); // joins the running one, one more is queued
    assert.equal(store.stuckSeconds(), undefined);
    now += 11_000; // the read has not finished: on a hung file system it never would
    assert.equal(store.stuckSeconds(), 11, 'readiness says a re-read is stuck');
    assert.deepEqual(await Promise.all([first, second]), [true, false]);
    assert.equal(store.stuckSeconds(), undefined);
    assert.equal(store.current().password, 'pw-2222');
    store.close();
    rmSync(dir, { recursive: true });
  });

  it('notices a Kubernetes symlink swap in the parent directory and calls onChange', { timeout: 10_000 }, async () => {
    const dir = tempDir();
    k8sVolume(dir, { 'api-key': 'key-old', password: 'pw-old' }, 1);
    const { logger } = captureLogger();
    const store = await createCredentialStore(
      { apiKeyFile: join(dir, 'api-key'), passwordFile: join(dir, 'password') },
      { logger, secrets: new SecretSet() },
    );
    const changed = new Promise<void>((resolve) => store.watch(resolve));
    k8sVolume(dir, { 'api-key': 'key-new', password: 'pw-new' }, 2);
    await changed;
    assert.deepEqual(store.current(), { apiKey: 'key-new', password: 'pw-new', version: 2 });
    // The watcher applied the change; a reload() from the onChange handler still reports it once.
    assert.equal(await store.reload(), true);
    assert.equal(await store.reload(), false);
    store.close();
    rmSync(dir, { recursive: true });
  });
});
