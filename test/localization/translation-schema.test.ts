import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidResponseError } from '../../src/shared/errors.js';
import { formatTranslationSummary } from '../../src/localization/summary.js';
import { parseTranslationRef } from '../../src/config/translation-ref.js';
import { lastChangeEpochSeconds, parseTranslation, sourceLanguage } from '../../src/localization/translation-schema.js';
import { localizationSampleData, type WeblateShape } from '../../src/simulator/localization-data.js';

const BASE = 'https://l10n.test';

/** A fresh copy of one sample translation, to be broken by the test. */
function sample(key = 'demo/web/en', shape: WeblateShape = 'current'): Record<string, any> {
  return structuredClone(localizationSampleData(BASE, shape).get(key)!);
}

function rejects(body: unknown, field: string, reason: RegExp): void {
  assert.throws(() => parseTranslation(body), (err: unknown) => {
    assert.ok(err instanceof InvalidResponseError);
    assert.equal(err.field, field);
    assert.match(err.message, reason);
    assert.equal(err.code, 'SIDECAR_ERR_INVALID_RESPONSE');
    return true;
  });
}

describe('translation schema', () => {
  for (const shape of ['current', 'legacy'] as const) {
    it(`accepts every sample translation of the ${shape} shape`, () => {
      for (const [key, body] of localizationSampleData(BASE, shape)) {
        const t = parseTranslation(body);
        const ref = parseTranslationRef(key);
        assert.equal(t.component.project.slug, ref.project);
        assert.equal(t.component.slug, ref.component.split('/').at(-1));
        assert.equal(t.language.code, ref.language);
        assert.equal(sourceLanguage(t)?.code, 'ru');
      }
    });
  }

  it('takes the source language from the component (4.3+) before the project (older servers)', () => {
    const current = sample();
    assert.equal(current.component.project.source_language, undefined);
    assert.equal(sourceLanguage(parseTranslation(current))?.name, 'Russian');
    const legacy = sample('demo/web/en', 'legacy');
    assert.equal(legacy.component.source_language, undefined);
    assert.equal(sourceLanguage(parseTranslation(legacy))?.name, 'Russian');
    delete legacy.component.project.source_language;
    assert.equal(sourceLanguage(parseTranslation(legacy)), undefined);
  });

  it('accepts null and missing fields the product does not read (read-only token, no licence, no links)', () => {
    const body = sample('demo/emails/fr');
    assert.equal(body.component.git_export, null);
    assert.equal(body.component.license_url, null);
    body.component.repo = undefined;
    delete body.language.direction;
    delete body.share_url;
    delete body.web_url;
    delete body.last_author;
    const t = parseTranslation(body);
    assert.equal(t.last_change, null);
    assert.equal(t.web_url, undefined);
  });

  it('tolerates fields Weblate adds in newer releases', () => {
    const body = sample();
    body.translated_words_percent = 92.7;
    body.component.project.instructions = '';
    assert.equal((parseTranslation(body) as Record<string, unknown>).translated_words_percent, 92.7);
  });

  it('names a missing nested field in dotted form', () => {
    const body = sample();
    delete body.component.project.slug;
    rejects(body, 'component.project.slug', /component\.project\.slug is missing/);
  });

  it('names a missing top-level field', () => {
    const body = sample();
    delete body.total_words;
    rejects(body, 'total_words', /is missing/);
  });

  it('names a field of the wrong type', () => {
    const body = sample();
    body.translated_percent = '95.0';
    rejects(body, 'translated_percent', /must be number/);
  });

  it('rejects null in the fields it reads', () => {
    const body = sample();
    body.total = null;
    rejects(body, 'total', /must be integer/);
    const nested = sample();
    nested.component.source_language.code = null;
    rejects(nested, 'component.source_language.code', /must be string/);
    const legacy = sample('demo/web/en', 'legacy');
    legacy.component.project.source_language.code = null;
    rejects(legacy, 'component.project.source_language.code', /must be string/);
  });

  it('rejects a fractional or negative count and a percentage above 100', () => {
    rejects({ ...sample(), fuzzy: 1.5 }, 'fuzzy', /integer/);
    rejects({ ...sample(), have_comment: -1 }, 'have_comment', />= 0/);
    rejects({ ...sample(), fuzzy_percent: 101 }, 'fuzzy_percent', /<= 100/);
  });

  it('rejects a last_change that is not a date-time', () => {
    rejects({ ...sample(), last_change: 'yesterday' }, 'last_change', /pattern/);
    rejects({ ...sample(), last_change: '2025-13-45T99:99:99' }, 'last_change', /not a valid date-time/);
  });

  it('rejects a body that is not an object', () => {
    rejects([], '(body)', /must be object/);
    rejects(null, '(body)', /must be object/);
  });

  it('reads a zone-less last_change as UTC', () => {
    assert.equal(lastChangeEpochSeconds({ last_change: '2025-11-18T14:03:27.5' }), Date.UTC(2025, 10, 18, 14, 3, 27, 500) / 1000);
    assert.equal(lastChangeEpochSeconds({ last_change: '2025-11-18T14:03:27+02:00' }), Date.UTC(2025, 10, 18, 12, 3, 27) / 1000);
    assert.equal(lastChangeEpochSeconds({ last_change: null }), null);
  });
});

describe('translation summary', () => {
  it('shows names, languages, counts with percentages, last change and URLs', () => {
    assert.equal(formatTranslationSummary(parseTranslation(sample())), [
      'Translation demo/web/en',
      'Component:        Demo / Web',
      'Language:         English (en)',
      'Source language:  Russian (ru)',
      '',
      '                             units             words',
      'Total                          240              1620',
      'Translated             228 (95.0%)      1502 (92.7%)',
      'Fuzzy                     7 (2.9%)         61 (3.8%)',
      'Failing checks            3 (1.3%)         19 (1.2%)',
      'Suggestions                      5',
      'Comments                         2',
      '',
      'Last change:      2025-11-18 14:03:27 UTC by Alex Morgan',
      'Web:              https://l10n.test/projects/demo/web/en/',
      'Translate:        https://l10n.test/translate/demo/web/en/',
      '',
    ].join('\n'));
  });

  it('reports 100 % translated words for a translation without strings, like Weblate', () => {
    const text = formatTranslationSummary(parseTranslation(sample('demo/docs/guide/en')), parseTranslationRef('demo/docs/guide/en'));
    assert.match(text, /^Translation demo\/docs\/guide\/en$/m);
    assert.match(text, /^Translated +0 \(100\.0%\) +0 \(100\.0%\)$/m);
    assert.match(text, /^Fuzzy +0 \(0\.0%\) +0 \(0\.0%\)$/m);
  });

  it('leaves out the links and the author the server did not give', () => {
    const body = sample();
    delete body.web_url;
    body.translate_url = null;
    body.last_author = '';
    const text = formatTranslationSummary(parseTranslation(body));
    assert.doesNotMatch(text, /^(Web|Translate):/m);
    assert.match(text, /^Last change: +2025-11-18 14:03:27 UTC$/m);
  });

  it('says "never" for an untouched translation', () => {
    assert.match(formatTranslationSummary(parseTranslation(sample('demo/emails/fr'))), /^Last change: {6}never$/m);
  });

  it('strips terminal control characters from server-supplied names', () => {
    const body = sample();
    body.last_author = 'Mallory\u001b[2J\u0007';
    const text = formatTranslationSummary(parseTranslation(body));
    assert.match(text, /by Mallory\[2J$/m);
    assert.doesNotMatch(text, /[\u001b\u0007]/);
  });
});
