import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { assertBuildIsCurrent } from '../helpers/cli.js';
import { fileURLToPath } from 'node:url';

const FIXTURES = fileURLToPath(new URL('../fixtures/weblate/translations/', import.meta.url));
const SOURCE = fileURLToPath(new URL('../../src/localization/translation-schema.ts', import.meta.url));
const BUILT = fileURLToPath(new URL('../../dist/lib/localization/translation-schema.js', import.meta.url));

/** Each Weblate fixture as sent, and broken in each way the reader must refuse or tolerate. */
function cases(): unknown[] {
  const out: unknown[] = [];
  for (const name of readdirSync(FIXTURES).filter((f) => f.endsWith('.json'))) {
    const body = JSON.parse(readFileSync(FIXTURES + name, 'utf8')) as Record<string, any>;
    out.push(body);
    const broken: Array<(t: Record<string, any>) => void> = [
      (t) => { t.translated = -1; },
      (t) => { t.translated_words = 1.5; },
      (t) => { t.fuzzy_percent = '12'; },
      (t) => { t.translated_percent = 100.5; },
      (t) => { delete t.component.project.slug; },
      (t) => { t.component.slug = ''; },
      (t) => { t.language = null; },
      (t) => { t.last_change = 'yesterday'; },
      (t) => { t.last_change = '2025-13-45T99:00:00'; },
      (t) => { t.last_change = null; },
      (t) => { t.component.source_language = null; },
      (t) => { t.web_url = null; },
      (t) => { t.web_url = 42; },
      (t) => { t.extra_field_from_a_newer_weblate = { any: 'thing' }; },
    ];
    for (const breakIt of broken) {
      const copy = structuredClone(body);
      breakIt(copy);
      out.push(copy);
    }
  }
  return out;
}

/** The reader's verdict on every case, in a fresh process: the accepted object's language or the error. */
function verdicts(module: string, loader: string[]): { verdicts: string[]; ajvLoaded: boolean } {
  const script = `
    import { createRequire } from 'node:module';
    const { parseTranslation } = await import(${JSON.stringify(module)});
    const { readFileSync } = await import('node:fs');
    const cases = JSON.parse(readFileSync(0, 'utf8'));
    const verdicts = cases.map((c) => {
      try { return 'ok ' + parseTranslation(c).language.code; } catch (e) { return e.name + ' ' + e.message; }
    });
    const ajvLoaded = Object.keys(createRequire(import.meta.url).cache).some((f) => f.includes('/node_modules/ajv/dist/core.js'));
    process.stdout.write(JSON.stringify({ verdicts, ajvLoaded }));`;
  const out = execFileSync(process.execPath, [...loader, '--input-type=module', '-e', script], { encoding: 'utf8', input: JSON.stringify(cases()) });
  return JSON.parse(out) as { verdicts: string[]; ajvLoaded: boolean };
}

// These run dist/: fail fast, with the reason, when it is older than src/.
assertBuildIsCurrent();

describe('the prebuilt Weblate translation validator (dist/lib/translation-validator.cjs)', () => {
  it('reaches the same verdict as the schema compiled by ajv, on Weblate\'s fixtures as sent and broken, without loading ajv', () => {
    const compiled = verdicts(SOURCE, ['--import', 'tsx']);
    const prebuilt = verdicts(BUILT, []);
    assert.equal(compiled.ajvLoaded, true, 'from sources the schema is compiled by ajv (the reference)');
    assert.equal(prebuilt.ajvLoaded, false, 'the built reader compiled the schema with ajv instead of using the prebuilt validator');
    assert.deepEqual(prebuilt.verdicts, compiled.verdicts);
    // The corpus exercises both outcomes.
    assert.ok(compiled.verdicts.some((v) => v.startsWith('ok ')));
    assert.ok(compiled.verdicts.some((v) => v.startsWith('InvalidResponseError')), compiled.verdicts.join('\n'));
  });
});
