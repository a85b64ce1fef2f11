import { formatTranslationRef, type TranslationRef } from '../config/translation-ref.js';
import { lastChangeEpochSeconds, sourceLanguage, type Language, type Translation } from './translation-schema.js';

/**
 * A readable multi-line summary of a translation for the terminal: names, language and source
 * language, units and words per state with percentages, suggestions, comments, last change and
 * the web and translate URLs (left out when the server gave none). `ref`, the reference looked
 * up, names a component inside a category by its path (the answer only has its own slug).
 * Server-supplied text is stripped of control characters so a crafted name cannot send escape
 * sequences to the terminal.
 */
export function formatTranslationSummary(t: Translation, ref?: TranslationRef): string {
  const project = t.component.project;
  const title = ref ? formatTranslationRef(ref) : `${project.slug}/${t.component.slug}/${t.language.code}`;
  const lines: string[] = [
    `Translation ${clean(title)}`,
    field('Component', `${clean(project.name)} / ${clean(t.component.name)}`),
    field('Language', `${clean(t.language.name)} (${clean(t.language.code)})`),
    field('Source language', languageText(sourceLanguage(t))),
    '',
    `${''.padEnd(18)}${'units'.padStart(16)}${'words'.padStart(18)}`,
    row('Total', `${t.total}`, `${t.total_words}`),
    row('Translated', count(t.translated, t.translated_percent), words(t.translated_words, t.total_words, true)),
    row('Fuzzy', count(t.fuzzy, t.fuzzy_percent), words(t.fuzzy_words, t.total_words)),
    row('Failing checks', count(t.failing_checks, t.failing_checks_percent), words(t.failing_checks_words, t.total_words)),
    row('Suggestions', `${t.have_suggestion}`, ''),
    row('Comments', `${t.have_comment}`, ''),
    '',
    field('Last change', lastChange(t)),
  ];
  if (t.web_url) lines.push(field('Web', clean(t.web_url)));
  if (t.translate_url) lines.push(field('Translate', clean(t.translate_url)));
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

/**
 * The API gives no word percentages, so they are computed from the word totals. With no words at
 * all, "translated" is complete (100 %) and the other states 0 %, like Weblate's own
 * `translation_percent(0, 0)` and its zero-complete rule for the translated counts.
 */
function words(n: number, total: number, zeroComplete = false): string {
  const percent = total === 0 ? (zeroComplete ? 100 : 0) : (n * 100) / total;
  return `${n} (${percent.toFixed(1)}%)`;
}

function languageText(l: Language | undefined): string {
  return l ? `${clean(l.name)} (${clean(l.code)})` : 'not given by the server';
}

function lastChange(t: Translation): string {
  const seconds = lastChangeEpochSeconds(t);
  if (seconds === null || seconds === undefined) return 'never';
  const when = `${new Date(seconds * 1000).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  return t.last_author ? `${when} by ${clean(t.last_author)}` : when;
}

function clean(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
}
