import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { translationCommand } from '../../src/commands/translation.js';
import { createLocalizationSimulator, type LocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { testTls } from '../helpers/tls.js';
import { captureIo } from '../helpers/command-io.js';

const TOKEN = 'wlu_command7oken1a2b3c4d';
const dir = mkdtempSync(join(tmpdir(), 'b2b-translation-cmd-'));
let configs = 0;


/** A full config file the loader accepts: service + credentials, plus `localization` when given. */
function writeConfig(localization?: string): string {
  const file = join(dir, `sidecar-${++configs}.yaml`);
  const base = 'service:\n  baseUrl: https://api.example.com\ncredentials:\n  apiKey: api-key-1234\n  password: password-5678\n';
  writeFileSync(file, localization === undefined ? base : `${base}localization:\n${localization}`);
  return file;
}

/** Starts a simulator requiring TOKEN; `config(token)` writes a config pointing at it (no token: null). */
async function withSimulator(fn: (sim: LocalizationSimulator, config: (token?: string | null) => Promise<string>) => Promise<void>): Promise<void> {
  const tls = await testTls();
  const sim = createLocalizationSimulator({ tls, token: TOKEN });
  const { url } = await sim.start();
  const config = async (token: string | null = TOKEN) =>
    writeConfig(`  baseUrl: ${url}\n  caFile: ${tls.caFile}\n${token === null ? '' : `  token: ${token}\n`}`);
  try {
    await fn(sim, config);
  } finally {
    await sim.stop();
  }
}

describe('translation command', () => {
  it('prints a readable summary and exits 0', async () => {
    await withSimulator(async (sim, config) => {
      const run = captureIo();
      assert.equal(await translationCommand({ ref: 'demo/web/en', config: await config() }, run.io), 0);
      const text = run.stdout();
      assert.match(text, /^Translation demo\/web\/en$/m);
      assert.match(text, /^Language: +English \(en\)$/m);
      assert.match(text, /^Source language: +Russian \(ru\)$/m);
      assert.match(text, /^Translated +228 \(95\.0%\) +1502 \(92\.7%\)$/m);
      assert.match(text, /^Last change: +2025-11-18 14:03:27 UTC by Alex Morgan$/m);
      assert.ok(text.includes(`Translate:        https://127.0.0.1:`));
      assert.equal(run.stderr(), '');
      assert.equal(sim.stats.requests[0]?.headers.authorization, `Token ${TOKEN}`);
    });
  });

  it('prints the validated translation as JSON with --json', async () => {
    await withSimulator(async (_sim, config) => {
      const run = captureIo();
      assert.equal(await translationCommand({ ref: 'demo/web/de', config: await config(), json: true }, run.io), 0);
      const printed = JSON.parse(run.stdout());
      assert.equal(printed.language_code, 'de');
      assert.equal(printed.translated, 171);
      assert.equal(printed.component.source_language.code, 'ru');
      assert.match(printed.url, /^https:\/\/127\.0\.0\.1:\d+\/api\/translations\/demo\/web\/de\/$/);
    });
  });

  it('takes the token from B2B_L10N_TOKEN', async () => {
    await withSimulator(async (_sim, config) => {
      const run = captureIo({ B2B_L10N_TOKEN: TOKEN });
      assert.equal(await translationCommand({ ref: 'demo/emails/fr', config: await config(null) }, run.io), 0);
      assert.match(run.stdout(), /^Last change: +never$/m);
    });
  });

  it('exits 1 with the server\'s reason when the translation does not exist', async () => {
    await withSimulator(async (_sim, config) => {
      const run = captureIo();
      assert.equal(await translationCommand({ ref: 'demo/web/xx', config: await config() }, run.io), 1);
      assert.match(run.stderr(), /demo\/web\/xx not found: No Translation matches the given query\./);
      assert.equal(run.stdout(), '');
    });
  });

  it('exits 1 with the server\'s reason when the token is rejected, without printing it', async () => {
    await withSimulator(async (sim, config) => {
      sim.faults.errorShape = 'detail';
      const run = captureIo();
      assert.equal(await translationCommand({ ref: 'demo/web/en', config: await config('wlu_wrong0000') }, run.io), 1);
      assert.match(run.stderr(), /refused access to demo\/web\/en: Invalid token\./);
      assert.ok(!run.stderr().includes('wlu_wrong0000') && !run.stderr().includes(TOKEN));
    });
  });

  it('exits 1 when the server fails', async () => {
    await withSimulator(async (sim, config) => {
      sim.faults.failNext(500);
      const run = captureIo();
      assert.equal(await translationCommand({ ref: 'demo/web/en', config: await config() }, run.io), 1);
      assert.match(run.stderr(), /failed the lookup of demo\/web\/en: A server error occurred\./);
    });
  });

  it('exits 1 naming the bad field of a malformed answer, printing nothing on stdout', async () => {
    await withSimulator(async (sim, config) => {
      sim.faults.malformNext('language.name', 42);
      const run = captureIo();
      assert.equal(await translationCommand({ ref: 'demo/web/en', config: await config(), json: true }, run.io), 1);
      assert.match(run.stderr(), /invalid response: language\.name must be string/);
      assert.equal(run.stdout(), '');
    });
  });

  it('looks up a component inside a category, given as a path or in the %2F form', async () => {
    await withSimulator(async (sim, config) => {
      for (const ref of ['demo/docs/guide/en', 'demo/docs%2Fguide/en']) {
        const run = captureIo();
        assert.equal(await translationCommand({ ref, config: await config() }, run.io), 0, run.stderr());
        assert.match(run.stdout(), /^Translation demo\/docs\/guide\/en$/m);
        assert.match(run.stdout(), /^Translated +0 \(100\.0%\) +0 \(100\.0%\)$/m);
      }
      assert.deepEqual(sim.stats.requests.map((r) => r.url), ['/api/translations/demo/docs%252Fguide/en/', '/api/translations/demo/docs%252Fguide/en/']);
    });
  });

  it('exits 2 for a reference that is not slugs, without a request', async () => {
    await withSimulator(async (sim, config) => {
      for (const ref of ['../x', 'a/b', 'a/b/../d', 'demo/web/..', 'demo/docs%2F..%2Fx/en']) {
        const run = captureIo();
        assert.equal(await translationCommand({ ref, config: await config() }, run.io), 2);
        assert.match(run.stderr(), /invalid translation reference/);
      }
      assert.equal(sim.stats.count, 0);
    });
  });

  it('exits 2 when the configuration has no localization section', async () => {
    const run = captureIo();
    assert.equal(await translationCommand({ ref: 'demo/web/en', config: writeConfig() }, run.io), 2);
    assert.match(run.stderr(), /no localization section/);
  });

  it('exits 2 when the configuration is invalid', async () => {
    const run = captureIo();
    assert.equal(await translationCommand({ ref: 'demo/web/en', config: join(dir, 'missing.yaml') }, run.io), 2);
    assert.match(run.stderr(), /invalid configuration/);
  });
});

