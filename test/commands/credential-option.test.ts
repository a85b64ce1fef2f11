import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { chooseCredentialSets, chooseOneCredentialSet, configForSet } from '../../src/commands/credential-choice.js';
import { doctorCommand, type DoctorArgs } from '../../src/commands/doctor.js';
import { tokenCommand, type TokenArgs } from '../../src/commands/token.js';
import { credentialSets } from '../../src/config/credential-sets.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { Config } from '../../src/config/schema.js';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { createB2bSimulator } from '../../src/simulator/b2b-simulator.js';
import { captureIo } from '../helpers/command-io.js';
import { CREDENTIALS } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-credential-option-'));
const WRONG = { apiKey: 'wrong-api-key-5555555555', password: 'wrong-password-4444444444' };
const OTHER = { apiKey: 'other-api-key-7777777777', password: 'other-password-6666666666', rkObjectId: 'obj-77' };

async function startSim(t: TestContext, creds: { apiKey: string; password: string; rkObjectId?: string }) {
  const sim = createB2bSimulator({ ...creds, ttlSeconds: 900, tls, rkObjectId: creds.rkObjectId ?? CREDENTIALS.rkObjectId });
  t.after(() => sim.stop());
  await sim.start();
  return sim;
}

let files = 0;
/** The single form, from a file: the test credentials, the test CA, free ports. */
async function singleSet(baseUrl: string): Promise<{ file: string; config: Config }> {
  const file = join(dir, `sidecar-${++files}.yaml`);
  writeFileSync(file, stringify({ service: { baseUrl, caFile: tls.caFile }, credentials: CREDENTIALS, listen: { port: 0 }, admin: { port: 0 } }));
  return { file, config: await loadConfig(file, {}) };
}

/**
 * Three sets, in the list form: "a" the simulator's own key, "b" a key it refuses, "c" another
 * installation of the service (its own baseUrl) with its own key.
 */
async function threeSets(t: TestContext): Promise<{ config: Config; main: { url: string; stats: { tokensIssued: number } }; other: { url: string; stats: { tokensIssued: number } } }> {
  const main = await startSim(t, CREDENTIALS);
  const other = await startSim(t, OTHER);
  const { config } = await singleSet(main.url);
  const credentials = [{ id: 'a', ...CREDENTIALS }, { id: 'b', ...WRONG }, { id: 'c', ...OTHER, baseUrl: other.url }];
  return { config: { ...config, credentials: credentials as unknown as Config['credentials'] }, main, other };
}

async function doctor(args: DoctorArgs, config?: Config) {
  const run = captureIo({});
  const code = await doctorCommand(args, run.io, config);
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

async function token(args: TokenArgs, config?: Config) {
  const run = captureIo({});
  const code = await tokenCommand(args, run.io, config);
  return { code, stdout: run.stdout(), stderr: run.stderr() };
}

function assertNoSecrets(text: string): void {
  for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, WRONG.apiKey, WRONG.password, OTHER.apiKey, OTHER.password]) {
    assert.ok(!text.includes(secret), `a secret leaked: ${text}`);
  }
}

describe('--credential: choosing sets', () => {
  const sets = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];

  it('the single form is one set named default, with its keys', () => {
    assert.deepEqual(credentialSets({ credentials: { apiKey: 'k', passwordFile: '/p' }, service: { baseUrl: 'https://vendor.test' } } as Config), [
      { id: 'default', apiKey: 'k', passwordFile: '/p', baseUrl: 'https://vendor.test', path: ['credentials'], single: true },
    ]);
  });

  it('chooses the named set, every set without the option, and refuses an unknown id listing the known ones (exit 2)', () => {
    const io = captureIo({});
    assert.deepEqual(chooseCredentialSets('doctor', sets, 'b', io.io), [{ id: 'b' }]);
    assert.deepEqual(chooseCredentialSets('doctor', sets, undefined, io.io), sets);
    assert.equal(chooseCredentialSets('doctor', sets, 'zz', io.io), 2);
    assert.equal(io.stderr(), 'doctor: no credential set has the id "zz"; the config\'s sets: a, b, c\n');
  });

  it('a command that works on one set needs --credential when there are several', () => {
    const io = captureIo({});
    assert.equal(chooseOneCredentialSet('token', sets, undefined, io.io), 2);
    assert.equal(io.stderr(), 'token: the config has 3 credential sets (a, b, c): name one with --credential <id>\n');
    assert.deepEqual(chooseOneCredentialSet('token', [{ id: 'default' }], undefined, io.io), { id: 'default' });
  });

  it('runs a command on the config as one set alone: its keys, its own baseUrl, its own token file', () => {
    const config = { credentials: {}, service: { baseUrl: 'https://main.example' }, token: { file: '/run/b2b/token' } } as unknown as Config;
    const c = configForSet(config, { id: 'c', apiKeyFile: '/k', password: 'p', baseUrl: 'https://other.example', single: false });
    assert.deepEqual(c.credentials, { apiKeyFile: '/k', password: 'p' });
    assert.equal(c.service.baseUrl, 'https://other.example');
    assert.equal(c.token.file, '/run/b2b/token.c', 'the file run writes for this set of a list');
    const single = configForSet(config, { id: 'default', apiKey: 'k', single: true });
    assert.equal(single.service.baseUrl, 'https://main.example');
    assert.equal(single.token.file, '/run/b2b/token', 'the object form keeps the name');
  });
});

describe('token --credential', () => {
  it('prints the named set\'s token, from its own installation of the service', async (t) => {
    const { config, main, other } = await threeSets(t);
    const a = await token({ credential: 'a' }, config);
    assert.equal(a.code, 0, a.stderr);
    assert.match(a.stdout, /^[A-Za-z0-9_-]{43}\n$/);
    const c = await token({ credential: 'c' }, config);
    assert.equal(c.code, 0, c.stderr);
    assert.notEqual(c.stdout, a.stdout);
    assert.deepEqual([main.stats.tokensIssued, other.stats.tokensIssued], [1, 1], 'c asked its own service with its own key');
  });

  it('exits 1 naming the 401 for a set whose key is refused, and 2 without --credential or with an unknown id', async (t) => {
    const { config } = await threeSets(t);
    const b = await token({ credential: 'b' }, config);
    assert.equal(b.code, 1);
    assert.match(b.stderr, /credentials rejected \(401\)/);
    const none = await token({}, config);
    assert.equal(none.code, 2);
    assert.match(none.stderr, /^token: the config has 3 credential sets \(a, b, c\): name one with --credential <id>$/m);
    const unknown = await token({ credential: 'zz' }, config);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /^token: no credential set has the id "zz"; the config's sets: a, b, c$/m);
    assert.equal(unknown.stdout, '');
    assertNoSecrets(b.stdout + b.stderr + none.stderr + unknown.stderr);
  });

  it('one set: works as before without the option, and with --credential default', async (t) => {
    const sim = await startSim(t, CREDENTIALS);
    const { file } = await singleSet(sim.url);
    for (const args of [{ config: file }, { config: file, credential: 'default' }]) {
      const out = await token(args);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /^[A-Za-z0-9_-]{43}\n$/);
    }
    const unknown = await token({ config: file, credential: 'a' });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /the config's sets: default$/m);
  });
});

describe('doctor --credential', () => {
  it('with several sets and no option checks each under its own heading, and exits 1 when one fails', async (t) => {
    const { config } = await threeSets(t);
    const out = await doctor({}, config);
    assert.equal(out.code, 1, out.stdout);
    const lines = out.stdout.split('\n').filter(Boolean).map((l) => (l.startsWith('credential set') ? l : l.slice(0, 2) + l.slice(2).split(':')[0]));
    assert.deepEqual(lines, [
      '✓ config', '✓ listen',
      'credential set "a"', '✓ connect', '✓ gentoken',
      'credential set "b"', '✓ connect', '✗ gentoken',
      'credential set "c"', '✓ connect', '✓ gentoken',
    ]);
    assertNoSecrets(out.stdout + out.stderr);
  });

  it('--json: the common steps, then a field per set under credentials', async (t) => {
    const { config, main, other } = await threeSets(t);
    const out = await doctor({ json: true }, config);
    assert.equal(out.code, 1);
    const report = JSON.parse(out.stdout) as { steps: DoctorStep[]; credentials: Record<string, DoctorStep[]> };
    assert.deepEqual(report.steps.map((s) => s.step), ['config', 'listen']);
    assert.deepEqual(Object.keys(report.credentials), ['a', 'b', 'c']);
    assert.deepEqual(report.credentials.b!.map((s) => [s.step, s.ok, s.status]), [['connect', true, undefined], ['gentoken', false, 401]]);
    const gentokenUrl = (id: string) => report.credentials[id]!.find((s) => s.step === 'gentoken')!.url;
    assert.equal(gentokenUrl('a'), `${main.url}/pub/b2b/v1/auth/gentoken`);
    assert.equal(gentokenUrl('c'), `${other.url}/pub/b2b/v1/auth/gentoken`, 'c checked at its own installation');
    assertNoSecrets(out.stdout);
  });

  it('--credential checks that set only (exit 0 when it passes), and an unknown id exits 2 listing the ids', async (t) => {
    const { config, main } = await threeSets(t);
    const out = await doctor({ credential: 'a', json: true }, config);
    assert.equal(out.code, 0, out.stdout);
    const report = JSON.parse(out.stdout) as { credentials: Record<string, DoctorStep[]> };
    assert.deepEqual(Object.keys(report.credentials), ['a']);
    assert.equal(main.stats.tokensIssued, 1);
    const unknown = await doctor({ credential: 'zz' }, config);
    assert.equal(unknown.code, 2);
    assert.equal(unknown.stdout, '');
    assert.match(unknown.stderr, /^doctor: no credential set has the id "zz"; the config's sets: a, b, c$/m);
  });

  it('one set: the report is unchanged (a JSON array), with or without --credential default', async (t) => {
    const sim = await startSim(t, CREDENTIALS);
    const { file } = await singleSet(sim.url);
    for (const args of [{ config: file, json: true }, { config: file, json: true, credential: 'default' }]) {
      const out = await doctor(args);
      assert.equal(out.code, 0, out.stdout);
      const steps = JSON.parse(out.stdout) as DoctorStep[];
      assert.ok(Array.isArray(steps));
      assert.deepEqual(steps.map((s) => s.step), ['config', 'listen', 'connect', 'gentoken']);
    }
    const unknown = await doctor({ config: file, credential: 'a' });
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /the config's sets: default$/m);
  });
});
