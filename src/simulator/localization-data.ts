/**
 * Weblate-shaped sample data for the localization simulator: project `demo` (source language
 * Russian) with component `web` (git, translations `ru` template, `en`, `de`) and component
 * `emails` without version control holding an untouched `fr` translation. Every Weblate URL is
 * built from `base`, the simulator's own address, so links in answers point back at it.
 */

interface LanguageInfo { code: string; name: string }
interface Stats {
  total: number; totalWords: number; translated: number; translatedWords: number; fuzzy: number; fuzzyWords: number;
  failing: number; failingWords: number; suggestions: number; comments: number;
}
interface ComponentInfo { slug: string; name: string; vcs: boolean }

const RU = { code: 'ru', name: 'Russian' };

function language(base: string, l: LanguageInfo) {
  return { code: l.code, name: l.name, direction: 'ltr', web_url: `${base}/languages/${l.code}/`, url: `${base}/api/languages/${l.code}/` };
}

function project(base: string) {
  const api = `${base}/api/projects/demo/`;
  return {
    name: 'Demo', slug: 'demo', web: 'https://demo.example.com/', source_language: language(base, RU),
    web_url: `${base}/projects/demo/`, url: api, components_list_url: `${api}components/`,
    repository_url: `${api}repository/`, statistics_url: `${api}statistics/`, changes_list_url: `${api}changes/`,
  };
}

function component(base: string, c: ComponentInfo) {
  const api = `${base}/api/components/demo/${c.slug}/`;
  return {
    name: c.name, slug: c.slug, project: project(base),
    vcs: c.vcs ? 'git' : null,
    repo: c.vcs ? `${base}/git/demo/${c.slug}/` : null,
    git_export: c.vcs ? `${base}/git/demo/${c.slug}/` : '',
    branch: c.vcs ? 'main' : null,
    filemask: c.vcs ? `locales/*/${c.slug}.json` : null,
    template: `locales/ru/${c.slug}.json`, new_base: '', file_format: 'json',
    license: 'MIT', license_url: 'https://spdx.org/licenses/MIT.html',
    web_url: `${base}/projects/demo/${c.slug}/`, url: api, repository_url: `${api}repository/`,
    translations_url: `${api}translations/`, statistics_url: `${api}statistics/`, lock_url: `${api}lock/`,
    changes_list_url: `${api}changes/`,
  };
}

function pct(n: number, total: number): number {
  return total === 0 ? 0 : Math.round((n * 1000) / total) / 10;
}

function translation(base: string, c: ComponentInfo, l: LanguageInfo, s: Stats, last: { at: string; by: string } | null) {
  const api = `${base}/api/translations/demo/${c.slug}/${l.code}/`;
  return {
    language: language(base, l), component: component(base, c), language_code: l.code,
    filename: `locales/${l.code}/${c.slug}.json`,
    revision: c.vcs ? '5f0c4a1d2b9e8f7a6c3d1e0b9a8f7e6d5c4b3a21,9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d' : '',
    web_url: `${base}/projects/demo/${c.slug}/${l.code}/`, share_url: `${base}/engage/demo/${l.code}/`,
    translate_url: `${base}/translate/demo/${c.slug}/${l.code}/`, url: api,
    is_template: l.code === RU.code,
    total: s.total, total_words: s.totalWords,
    translated: s.translated, translated_words: s.translatedWords, translated_percent: pct(s.translated, s.total),
    fuzzy: s.fuzzy, fuzzy_words: s.fuzzyWords, fuzzy_percent: pct(s.fuzzy, s.total),
    failing_checks: s.failing, failing_checks_words: s.failingWords, failing_checks_percent: pct(s.failing, s.total),
    have_suggestion: s.suggestions, have_comment: s.comments,
    last_change: last?.at ?? null, last_author: last?.by ?? null,
    repository_url: `${api}repository/`, file_url: `${api}file/`, statistics_url: `${api}statistics/`,
    changes_list_url: `${api}changes/`, units_list_url: `${api}units/`,
  };
}

const WEB = { slug: 'web', name: 'Web', vcs: true };
const EMAILS = { slug: 'emails', name: 'Emails', vcs: false };
const stats = (total: number, totalWords: number, rest: Omit<Stats, 'total' | 'totalWords'>): Stats => ({ total, totalWords, ...rest });

/** The simulator's translations, keyed `project/component/language`. */
export function localizationSampleData(base: string): Map<string, Record<string, unknown>> {
  const list = [
    translation(base, WEB, RU, stats(240, 1620, { translated: 240, translatedWords: 1620, fuzzy: 0, fuzzyWords: 0, failing: 0, failingWords: 0, suggestions: 0, comments: 1 }),
      { at: '2025-11-03T08:12:44.318205', by: 'Irina Sokolova' }),
    translation(base, WEB, { code: 'en', name: 'English' }, stats(240, 1620, { translated: 228, translatedWords: 1502, fuzzy: 7, fuzzyWords: 61, failing: 3, failingWords: 19, suggestions: 5, comments: 2 }),
      { at: '2025-11-18T14:03:27.512964', by: 'Alex Morgan' }),
    translation(base, WEB, { code: 'de', name: 'German' }, stats(240, 1620, { translated: 171, translatedWords: 1088, fuzzy: 12, fuzzyWords: 97, failing: 6, failingWords: 41, suggestions: 9, comments: 0 }),
      { at: '2025-10-29T09:41:05.004117', by: 'Jonas Becker' }),
    translation(base, EMAILS, { code: 'fr', name: 'French' }, stats(38, 412, { translated: 0, translatedWords: 0, fuzzy: 0, fuzzyWords: 0, failing: 0, failingWords: 0, suggestions: 0, comments: 0 }),
      null),
  ];
  return new Map(list.map((t) => [`demo/${t.component.slug}/${t.language_code}`, t as Record<string, unknown>]));
}
