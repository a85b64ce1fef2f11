import { lastChangeEpochSeconds, type Translation } from './translation-schema.js';

/**
 * A readable multi-line summary of a translation for the terminal: names, language and source
 * language, units and words per state with percentages, suggestions, comments, last change and
 * the web and translate URLs. Server-supplied text is stripped of control characters so a
 * crafted name cannot send escape sequences to the terminal.
 */
export function formatTranslationSummary(t: Translation): string {
  const project = t.component.project;
  const lines = [
    `Translation ${clean(project.slug)}/${clean(t.component.slug)}/${clean(t.language.code)}`,
    field('Component', `${clean(project.name)} / ${clean(t.component.name)}`),
    field('Language', `${clean(t.language.name)} (${clean(t.language.code)})`),
    field('Source language', `${clean(project.source_language.name)} (${clean(project.source_language.code)})`),
    '',
    `${''.padEnd(18)}${'units'.padStart(16)}${'words'.padStart(18)}`,
    row('Total', `${t.total}`, `${t.total_words}`),
    row('Translated', count(t.translated, t.translated_percent), words(t.translated_words, t.total_words)),
    row('Fuzzy', count(t.fuzzy, t.fuzzy_percent), words(t.fuzzy_words, t.total_words)),
    row('Failing checks', count(t.failing_checks, t.failing_checks_percent), words(t.failing_checks_words, t.total_words)),
    row('Suggestions', `${t.have_suggestion}`, ''),
    row('Comments', `${t.have_comment}`, ''),
    '',
    field('Last change', lastChange(t)),
    field('Web', clean(t.web_url)),
    field('Translate', clean(t.translate_url)),
  ];
  return `${lines.join('\n')}\n`;
}

function field(label: string, value: string): string {
  return `${`${label}:`.padEnd(18)}${value}`;
}

function row(label: string, units: string, wordsText: string): string {
  return `${label.padEnd(18)}${units.padStart(16)}${wordsText.padStart(18)}`.trimEnd();
}

/** Units use the server's percentage (it rounds to one decimal). */
function count(n: number, percent: number): string {
  return `${n} (${percent.toFixed(1)}%)`;
}

/** The API gives no word percentages, so they are computed from the word totals. */
function words(n: number, total: number): string {
  return `${n} (${(total === 0 ? 0 : (n * 100) / total).toFixed(1)}%)`;
}

function lastChange(t: Translation): string {
  const seconds = lastChangeEpochSeconds(t);
  if (seconds === null || seconds === undefined) return 'never';
  const when = `${new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  return t.last_author === null || t.last_author === '' ? when : `${when} by ${clean(t.last_author)}`;
}

function clean(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
}
