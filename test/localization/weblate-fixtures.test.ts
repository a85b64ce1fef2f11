import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { Registry } from '@prometheus-io/client';
import { InvalidResponseError } from '../../src/shared/errors.js';
import { createLocalizationClient, type LocalizationClient } from '../../src/localization/localization-client.js';
import {
  LocalizationRateLimitedError, LocalizationServerError, LocalizationUnauthorizedError, TranslationNotFoundError, type LocalizationError,
} from '../../src/localization/localization-errors.js';
import { formatTranslationSummary } from '../../src/localization/summary.js';
import { createTranslationMetrics } from '../../src/observability/metrics.js';
import { createTranslationExporter } from '../../src/localization/translation-exporter.js';
import { parseTranslationRef } from '../../src/config/translation-ref.js';
import { parseTranslation, TranslationSchema } from '../../src/localization/translation-schema.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { testTls } from '../helpers/tls.js';

/** Material from Weblate's own sources and its official client; provenance in test/fixtures/weblate/README.md. */
const FIXTURES = new URL('../fixtures/weblate/', import.meta.url);
const fixture = (name: string): Buffer => readFileSync(new URL(name, FIXTURES));
const CS_PATH = '/api/translations/hello/weblate/cs/';
const CS = parseTranslationRef('hello/weblate/cs');

interface Answer { status: number; body: Buffer; headers?: Record<string, string> }

/**
 * A real HTTPS server (test CA, listen(0)) answering exact raw request paths with fixture bytes,
 * 404 otherwise, and a client trusting it through the same CA file production uses.
 */
async function withServer(routes: Record<string, Answer>, fn: (client: LocalizationClient, seen: string[]) => Promise<void>): Promise<void> {
  const tls = await testTls();
  const seen: string[] = [];
  const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    seen.push(req.url ?? '');
    const answer = routes[req.url ?? ''] ?? { status: 404, body: fixture('errors/drf-404.json') };
    res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': answer.body.length, ...answer.headers });
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = createLocalizationClient({
    baseUrl: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, ca: loadTrustedCas(tls.caFile), token: () => 'wlu_fixture0token', timeoutMs: 5000,
  });
  try {
    await fn(client, seen);
  } finally {
    await client.close();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
}

const ok = (name: string): Answer => ({ status: 200, body: fixture(`translations/${name}`) });

/** What each translation fixture must read as. */
const SHAPES: Array<{ file: string; ref?: string; path?: string; source: string; lastChange: string; translated: string }> = [
  { file: 'wlc-translations-hello-weblate-cs.json', source: 'English (en)', lastChange: '2016-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'wlc-translation-with-current-component.json', source: 'English (en)', lastChange: '2016-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'wlc-translation-with-olderweblate-component.json', source: 'not given by the server', lastChange: '2016-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'docs-api-translation-example.json', source: 'English (en)', lastChange: '2016-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'current-translation.json', source: 'English (en)', lastChange: '2026-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'current-no-vcs-permission.json', source: 'English (en)', lastChange: '2026-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'current-no-licence.json', source: 'English (en)', lastChange: '2026-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'current-source-language.json', ref: 'hello/weblate/en', path: '/api/translations/hello/weblate/en/', source: 'English (en)', lastChange: '2026-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'current-zero-strings.json', source: 'English (en)', lastChange: '2026-03-07 10:20:05 UTC by Weblate Admin', translated: '0 (100.0%)' },
  { file: 'current-never-changed.json', source: 'English (en)', lastChange: 'never', translated: '0 (0.0%)' },
  { file: 'current-offset-timestamp.json', source: 'English (en)', lastChange: '2026-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
  { file: 'current-category-component.json', ref: 'hello/docs/usage/cs', path: '/api/translations/hello/docs%252Fusage/cs/', source: 'English (en)', lastChange: '2026-03-07 10:20:05 UTC by Weblate Admin', translated: '4 (100.0%)' },
];

describe('Weblate answers from its own sources (fixtures)', () => {
  it('covers every fixture file in translations/', () => {
    assert.deepEqual(readdirSync(new URL('translations/', FIXTURES)).sort(), SHAPES.map((s) => s.file).sort());
  });

  for (const shape of SHAPES) {
    it(`reads ${shape.file} through the client and summarises it (regression: "component.project.source_language is missing")`, async () => {
      const path = shape.path ?? CS_PATH;
      const ref = parseTranslationRef(shape.ref ?? 'hello/weblate/cs');
      await withServer({ [path]: ok(shape.file) }, async (client, seen) => {
        const { translation } = await client.getTranslation(ref);
        assert.deepEqual(seen, [path]);
        const raw = JSON.parse(fixture(`translations/${shape.file}`).toString());
        assert.equal(translation.total, raw.total);
        assert.equal(translation.translated_percent, raw.translated_percent);
        assert.equal(translation.failing_checks, raw.failing_checks);
        const text = formatTranslationSummary(translation, ref);
        assert.match(text, new RegExp(`^Translation ${shape.ref ?? 'hello/weblate/cs'}$`, 'm'));
        assert.match(text, new RegExp(`^Source language: +${shape.source.replace(/[()]/g, '\\$&')}$`, 'm'));
        assert.match(text, new RegExp(`^Last change: +${shape.lastChange}$`, 'm'));
        assert.match(text, new RegExp(`^Translated +${shape.translated.replace(/[()]/g, '\\$&')} `, 'm'));
      });
    });
  }

  it('reads the offset and Z timestamps as the same instant', async () => {
    await withServer({ [CS_PATH]: ok('current-offset-timestamp.json'), '/api/translations/hello/weblate/de/': ok('current-translation.json') }, async (client) => {
      const offset = (await client.getTranslation(CS)).translation.last_change;
      const utc = (await client.getTranslation(parseTranslationRef('hello/weblate/de'))).translation.last_change;
      assert.equal(offset, '2026-03-07T12:20:05.499123+02:00');
      assert.equal(utc, '2026-03-07T10:20:05.499123Z');
      assert.equal(Date.parse(offset!), Date.parse(utc!));
    });
  });

  it('exports gauges for the current shape (regression: no gauges, growing error counter)', async () => {
    await withServer({
      [CS_PATH]: ok('current-no-vcs-permission.json'),
      '/api/translations/hello/weblate/fr/': ok('current-never-changed.json'),
      '/api/translations/hello/docs%252Fusage/de/': ok('current-category-component.json'),
    }, async (client) => {
      const registry = new Registry();
      const warnings: unknown[] = [];
      const exporter = createTranslationExporter({
        metrics: createTranslationMetrics(registry), client, clock: new FakeClock(), pollIntervalSeconds: 60, logger: { warn: (m, meta) => warnings.push({ m, meta }) },
        watch: ['hello/weblate/cs', 'hello/weblate/fr', 'hello/docs%2Fusage/de'].map(parseTranslationRef),
      });
      await exporter.pollOnce();
      const text = await registry.metrics();
      assert.deepEqual(warnings, []);
      assert.match(text, /b2b_sidecar_translation_units\{project="hello",component="weblate",language="cs",state="failing_checks"\} 3/);
      assert.match(text, /b2b_sidecar_translation_words\{project="hello",component="docs\/usage",language="de",state="total"\} 15/);
      assert.match(text, /b2b_sidecar_translation_last_change_timestamp_seconds\{project="hello",component="weblate",language="cs"\} 1772878805\.499$/m);
      assert.doesNotMatch(text, /last_change_timestamp_seconds\{[^}]*language="fr"/);
      assert.match(text, /b2b_sidecar_translation_lookup_errors_total\{project="hello",component="weblate",language="cs"\} 0/);
      await exporter.stop();
    });
  });

  it('still rejects garbage with a typed error naming the field', async () => {
    const base = JSON.parse(fixture('translations/current-no-vcs-permission.json').toString());
    const broken = (edit: (t: any) => void): Answer => {
      const t = structuredClone(base);
      edit(t);
      return { status: 200, body: Buffer.from(JSON.stringify(t)) };
    };
    const cases: Array<[string, Answer, string, RegExp]> = [
      ['negative', broken((t) => { t.translated = -1; }), 'translated', /must be >= 0/],
      ['string-percent', broken((t) => { t.translated_percent = '100.0'; }), 'translated_percent', /must be number/],
      ['not-a-date', broken((t) => { t.last_change = 'last Tuesday'; }), 'last_change', /must match pattern/],
      ['impossible-date', broken((t) => { t.last_change = '2026-02-31T25:61:00Z'; }), 'last_change', /not a valid date-time/],
      ['no-code', broken((t) => { delete t.language.code; }), 'language.code', /is missing/],
      ['bad-source', broken((t) => { t.component.source_language = { code: 7, name: 'English' }; }), 'component.source_language.code', /must be string/],
      ['no-project-slug', broken((t) => { t.component.project.slug = ''; }), 'component.project.slug', /fewer than 1/],
    ];
    const routes = Object.fromEntries(cases.map(([name, answer]) => [`/api/translations/hello/weblate/${name}/`, answer]));
    await withServer(routes, async (client) => {
      for (const [name, , field, reason] of cases) {
        const err = await client.getTranslation(parseTranslationRef(`hello/weblate/${name}`)).then(() => undefined, (e: unknown) => e);
        assert.ok(err instanceof InvalidResponseError, `${name}: ${String(err)}`);
        assert.equal(err.field, field, name);
        assert.match(err.message, reason, name);
      }
    });
  });

  it('accepts an answer without the fields it does not read (language_code, the links, last_author)', async () => {
    const base = JSON.parse(fixture('translations/current-no-vcs-permission.json').toString());
    for (const key of ['language_code', 'last_author', 'web_url', 'translate_url']) delete base[key];
    await withServer({ '/api/translations/hello/weblate/lean/': { status: 200, body: Buffer.from(JSON.stringify(base)) } }, async (client) => {
      const { translation } = await client.getTranslation(parseTranslationRef('hello/weblate/lean'));
      assert.equal(translation.language.code, base.language.code);
    });
  });

  it('answers the %2F form of a category path on the wire as %252F, never as a bare %2F', async () => {
    await withServer({ '/api/translations/hello/docs%252Fusage/cs/': ok('current-category-component.json') }, async (client, seen) => {
      for (const text of ['hello/docs/usage/cs', 'hello/docs%2Fusage/cs', 'hello/docs%2fusage/cs', 'hello/docs%252Fusage/cs']) {
        const { translation } = await client.getTranslation(parseTranslationRef(text));
        assert.equal(translation.component.slug, 'usage', text);
      }
      assert.deepEqual(new Set(seen), new Set(['/api/translations/hello/docs%252Fusage/cs/']));
    });
  });
});

describe('Weblate serializer field lists, 2.x … 2026 (docs/traps.md T31: validate only what you read)', () => {
  interface Version {
    label: string; sourceLanguageOn: 'project' | 'component';
    LanguageSerializer: string[]; ProjectSerializer: string[]; ComponentSerializer: string[];
    TranslationSerializer: string[] | null; nullWithoutVcsView: string[] | null;
  }
  const { versions } = JSON.parse(fixture('serializer-fields.json').toString()) as { versions: Version[] };
  type Obj = { required?: string[]; properties: Record<string, Obj> };
  const schema = TranslationSchema as unknown as Obj;
  const required = (o: Obj) => o.required ?? [];

  it('lists the versions before and after the source_language move', () => {
    assert.deepEqual(versions.map((v) => v.sourceLanguageOn), ['project', 'project', 'project', 'component', 'component', 'component']);
  });

  for (const v of versions) {
    it(`requires no field Weblate ${v.label} does not emit`, () => {
      const component = schema.properties.component!;
      if (v.TranslationSerializer) assert.deepEqual(required(schema).filter((f) => !v.TranslationSerializer!.includes(f)), []);
      assert.deepEqual(required(component).filter((f) => !v.ComponentSerializer.includes(f)), []);
      assert.deepEqual(required(component.properties.project!).filter((f) => !v.ProjectSerializer.includes(f)), []);
      assert.deepEqual(required(schema.properties.language!).filter((f) => !v.LanguageSerializer.includes(f)), []);
      const where = v.sourceLanguageOn === 'project' ? v.ProjectSerializer : v.ComponentSerializer;
      assert.ok(where.includes('source_language'));
    });

    if (!v.TranslationSerializer) continue;
    it(`accepts a translation built from the ${v.label} field lists, other fields null`, () => {
      const t = parseTranslation(build(v));
      assert.equal(t.total, 4);
      assert.equal((t.component.source_language ?? t.component.project.source_language)?.code, 'en');
    });
  }

  /** Every listed field present; the ones the reader needs get values, all others null (or the no-vcs.view nulls). */
  function build(v: Version): Record<string, unknown> {
    const values: Record<string, unknown> = {
      code: 'cs', name: 'Hello', slug: 'hello', language_code: 'cs', last_change: '2026-03-07T10:20:05Z', last_author: null,
      total: 4, total_words: 15, translated: 4, translated_words: 15, fuzzy: 0, fuzzy_words: 0, failing_checks: 3,
      failing_checks_words: 11, have_suggestion: 0, have_comment: 0, translated_percent: 100, fuzzy_percent: 0, failing_checks_percent: 75,
    };
    const obj = (fields: string[], nested: Record<string, unknown> = {}) =>
      Object.fromEntries(fields.map((f) => [f, f in nested ? nested[f] : (values[f] ?? null)]));
    const english = obj(v.LanguageSerializer, { code: 'en', name: 'English' });
    const project = obj(v.ProjectSerializer, { source_language: english });
    const component = obj(v.ComponentSerializer, { project, source_language: english, name: 'Weblate', slug: 'weblate' });
    return obj(v.TranslationSerializer!, { component, language: obj(v.LanguageSerializer, { name: 'Czech' }) });
  }
});

describe('Weblate error answers, both shapes (fixtures)', () => {
  const EXPECTED: Record<number, { type: new (...a: any[]) => LocalizationError; code: string; detail: string }> = {
    401: { type: LocalizationUnauthorizedError, code: 'SIDECAR_ERR_L10N_UNAUTHORIZED', detail: 'Authentication credentials were not provided.' },
    403: { type: LocalizationUnauthorizedError, code: 'SIDECAR_ERR_L10N_UNAUTHORIZED', detail: 'You do not have permission to perform this action.' },
    404: { type: TranslationNotFoundError, code: 'SIDECAR_ERR_L10N_NOT_FOUND', detail: 'Not found.' },
    429: { type: LocalizationRateLimitedError, code: 'SIDECAR_ERR_L10N_RATE_LIMITED', detail: 'Request was throttled. Expected available in 3600 seconds.' },
    500: { type: LocalizationServerError, code: 'SIDECAR_ERR_L10N_SERVER', detail: 'A server error occurred.' },
  };

  for (const shape of ['drf', 'standardized']) {
    it(`maps the ${shape} error shape of 401, 403, 404, 429 and 500 to typed errors with the server's reason`, async () => {
      const routes: Record<string, Answer> = Object.fromEntries(Object.keys(EXPECTED).map((status): [string, Answer] => [
        `/api/translations/hello/weblate/s${status}/`,
        { status: Number(status), body: fixture(`errors/${shape}-${status}.json`), headers: status === '429' ? { 'retry-after': '3600' } : {} } as Answer,
      ]));
      await withServer(routes, async (client) => {
        for (const [status, want] of Object.entries(EXPECTED)) {
          const err = await client.getTranslation(parseTranslationRef(`hello/weblate/s${status}`)).then(() => undefined, (e: unknown) => e);
          assert.ok(err instanceof want.type, `${shape} ${status}: ${String(err)}`);
          assert.equal(err.code, want.code);
          assert.equal(err.upstreamStatus, Number(status));
          assert.equal(err.serverReason, want.detail, `${shape} ${status}`);
          assert.ok(err.message.includes(want.detail));
          if (err instanceof LocalizationRateLimitedError) assert.equal(err.retryAfterSeconds, 3600);
        }
      });
    });
  }
});
