/**
 * Weblate-shaped sample data for the localization simulator: project `demo` (source language
 * Russian) with component `web` (translations `ru` source, `en`, `de`), component `emails`
 * without a licence holding an untouched `fr` translation, and component `guide` inside the
 * category `docs` (Weblate 5.0+) with an empty `en` translation. Every Weblate URL is built from
 * `base`, the simulator's own address, so links in answers point back at it.
 *
 * Two shapes, after Weblate's serializers (field lists in test/fixtures/weblate/serializer-fields.json):
 * - `current` (Weblate 4.3 … 5.x, the default): `source_language` on the component, the VCS
 *   fields null as for a translator's or read-only token (no `vcs.view`), `license_url` null
 *   without a licence, timestamps with the server's offset, and no link fields (as in
 *   Weblate's documented example and the official client's test data);
 * - `legacy` (Weblate 2.x … 4.2, and the seed's API description): `source_language` on the
 *   project, VCS fields and link fields present, naive timestamps.
 */
export type WeblateShape = 'current' | 'legacy';

interface LanguageInfo { code: string; name: string }
interface Stats {
  total: number; totalWords: number; translated: number; translatedWords: number; fuzzy: number; fuzzyWords: number;
  failing: number; failingWords: number; suggestions: number; comments: number;
}
interface ComponentInfo { slug: string; name: string; license: string; category?: string }
interface Change { at: string; legacyAt: string; by: string }

const RU = { code: 'ru', name: 'Russian' };

function language(base: string, l: LanguageInfo, shape: WeblateShape) {
  const common = { code: l.code, name: l.name, direction: 'ltr', web_url: `${base}/languages/${l.code}/`, url: `${base}/api/languages/${l.code}/` };
  return shape === 'legacy' ? common : { ...common, statistics_url: `${base}/api/languages/${l.code}/statistics/` };
}

function project(base: string, shape: WeblateShape) {
  const api = `${base}/api/projects/demo/`;
  const common = { name: 'Demo', slug: 'demo', web: 'https://demo.example.com/', web_url: `${base}/projects/demo/`, url: api };
  if (shape === 'current') return { ...common, id: 1, instructions: '', enable_hooks: true };
  return {
    ...common, source_language: language(base, RU, shape), components_list_url: `${api}components/`,
    repository_url: `${api}repository/`, statistics_url: `${api}statistics/`, changes_list_url: `${api}changes/`,
  };
}

/** The component's path segment in API URLs: `docs%2Fguide` percent-encoded (see translation-ref.ts). */
function apiSegment(c: ComponentInfo): string {
  return encodeURIComponent(c.category ? `${c.category}%2F${c.slug}` : c.slug);
}

function component(base: string, c: ComponentInfo, shape: WeblateShape) {
  const api = `${base}/api/components/demo/${apiSegment(c)}/`;
  const web = `${base}/projects/demo/${c.category ? `${c.category}/` : ''}${c.slug}/`;
  const licenseUrl = c.license ? `https://spdx.org/licenses/${c.license}.html` : null;
  if (shape === 'current') {
    return {
      name: c.name, slug: c.slug, id: c.slug.length, source_language: language(base, RU, shape), project: project(base, shape),
      // A token without the vcs.view permission sees these as null (ComponentSerializer.to_representation).
      vcs: null, repo: null, git_export: null, branch: null, push_branch: null, filemask: null, screenshot_filemask: null,
      push: null, repoweb: null, linked_component: null,
      template: `locales/ru/${c.slug}.json`, edit_template: true, intermediate: '', new_base: '', file_format: 'json',
      license: c.license, license_url: licenseUrl, agreement: '', web_url: web, url: api, task_url: null,
      priority: 100, restricted: false, is_glossary: false, locked: false,
      category: c.category ? `${base}/api/categories/1/` : null,
    };
  }
  return {
    name: c.name, slug: c.slug, project: project(base, shape),
    vcs: 'git', repo: `${base}/git/demo/${c.slug}/`, git_export: `${base}/git/demo/${c.slug}/`,
    branch: 'main', filemask: `locales/*/${c.slug}.json`,
    template: `locales/ru/${c.slug}.json`, new_base: '', file_format: 'json',
    license: c.license, license_url: licenseUrl ?? '',
    web_url: web, url: api, repository_url: `${api}repository/`,
    translations_url: `${api}translations/`, statistics_url: `${api}statistics/`, lock_url: `${api}lock/`,
    changes_list_url: `${api}changes/`,
  };
}

/** Weblate's `translation_percent`: one decimal, and 100 % of nothing counts as complete for "translated". */
function pct(n: number, total: number, zeroComplete = false): number {
  return total === 0 ? (zeroComplete ? 100 : 0) : Math.round((n * 1000) / total) / 10;
}

function translation(base: string, shape: WeblateShape, c: ComponentInfo, l: LanguageInfo, s: Stats, last: Change | null) {
  const api = `${base}/api/translations/demo/${apiSegment(c)}/${l.code}/`;
  const web = `projects/demo/${c.category ? `${c.category}/` : ''}${c.slug}/${l.code}/`;
  const body: Record<string, unknown> = {
    language: language(base, l, shape), component: component(base, c, shape), language_code: l.code,
    filename: `locales/${l.code}/${c.slug}.json`,
    revision: '5f0c4a1d2b9e8f7a6c3d1e0b9a8f7e6d5c4b3a21',
    web_url: `${base}/${web}`, share_url: `${base}/engage/demo/${l.code}/`,
    translate_url: `${base}/translate/${web.slice('projects/'.length)}`, url: api,
    is_template: l.code === RU.code,
    ...(shape === 'current' ? { is_source: l.code === RU.code } : {}),
    total: s.total, total_words: s.totalWords,
    translated: s.translated, translated_words: s.translatedWords, translated_percent: pct(s.translated, s.total, true),
    fuzzy: s.fuzzy, fuzzy_words: s.fuzzyWords, fuzzy_percent: pct(s.fuzzy, s.total),
    failing_checks: s.failing, failing_checks_words: s.failingWords, failing_checks_percent: pct(s.failing, s.total),
    have_suggestion: s.suggestions, have_comment: s.comments,
    last_change: last ? (shape === 'current' ? last.at : last.legacyAt) : null, last_author: last?.by ?? null,
  };
  if (shape === 'legacy') {
    Object.assign(body, {
      repository_url: `${api}repository/`, file_url: `${api}file/`, statistics_url: `${api}statistics/`,
      changes_list_url: `${api}changes/`, units_list_url: `${api}units/`,
    });
  }
  return body;
}

const WEB = { slug: 'web', name: 'Web', license: 'MIT' };
const EMAILS = { slug: 'emails', name: 'Emails', license: '' };
const GUIDE = { slug: 'guide', name: 'Guide', license: 'CC-BY-4.0', category: 'docs' };
const stats = (total: number, totalWords: number, rest: Omit<Stats, 'total' | 'totalWords'>): Stats => ({ total, totalWords, ...rest });
const NONE = { translated: 0, translatedWords: 0, fuzzy: 0, fuzzyWords: 0, failing: 0, failingWords: 0, suggestions: 0, comments: 0 };

/** The simulator's translations, keyed `project/[category/]component/language`. */
export function localizationSampleData(base: string, shape: WeblateShape = 'current'): Map<string, Record<string, unknown>> {
  const list: Array<[ComponentInfo, Record<string, unknown>]> = [
    [WEB, translation(base, shape, WEB, RU, stats(240, 1620, { translated: 240, translatedWords: 1620, fuzzy: 0, fuzzyWords: 0, failing: 0, failingWords: 0, suggestions: 0, comments: 1 }),
      { at: '2025-11-03T08:12:44.318205Z', legacyAt: '2025-11-03T08:12:44.318205', by: 'Irina Sokolova' })],
    [WEB, translation(base, shape, WEB, { code: 'en', name: 'English' }, stats(240, 1620, { translated: 228, translatedWords: 1502, fuzzy: 7, fuzzyWords: 61, failing: 3, failingWords: 19, suggestions: 5, comments: 2 }),
      { at: '2025-11-18T16:03:27.512964+02:00', legacyAt: '2025-11-18T14:03:27.512964', by: 'Alex Morgan' })],
    [WEB, translation(base, shape, WEB, { code: 'de', name: 'German' }, stats(240, 1620, { translated: 171, translatedWords: 1088, fuzzy: 12, fuzzyWords: 97, failing: 6, failingWords: 41, suggestions: 9, comments: 0 }),
      { at: '2025-10-29T10:41:05.004117+01:00', legacyAt: '2025-10-29T09:41:05.004117', by: 'Jonas Becker' })],
    [EMAILS, translation(base, shape, EMAILS, { code: 'fr', name: 'French' }, stats(38, 412, NONE), null)],
    [GUIDE, translation(base, shape, GUIDE, { code: 'en', name: 'English' }, stats(0, 0, NONE), null)],
  ];
  // Categories came with Weblate 5.0: the legacy shape has no component inside one.
  return new Map(list.filter(([c]) => shape === 'current' || !c.category).map(([c, t]) => [`demo/${c.category ? `${c.category}/` : ''}${c.slug}/${t.language_code as string}`, t]));
}
