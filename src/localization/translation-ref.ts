import { TranslationRefError } from './localization-errors.js';

/** One translation instance: one language of one component of one project. */
export interface TranslationRef {
  project: string;
  component: string;
  language: string;
}

const SLUG = /^[A-Za-z0-9_.-]+$/;

/**
 * Parses `project/component/language`. Each part must be a slug (letters, digits, `_`, `.`,
 * `-`, and not `.` or `..`) and there must be exactly three, so an argument can never steer the
 * lookup into another API path (`../users`, `a/b/c/d`). Throws {@link TranslationRefError}.
 */
export function parseTranslationRef(text: string): TranslationRef {
  const parts = text.split('/');
  if (parts.length !== 3) {
    throw new TranslationRefError(`${JSON.stringify(text)} is not project/component/language`);
  }
  const names = ['project', 'component', 'language'] as const;
  parts.forEach((part, i) => {
    if (!SLUG.test(part) || part === '.' || part === '..') {
      throw new TranslationRefError(`${names[i]} ${JSON.stringify(part)} is not a slug (letters, digits, _ . -)`);
    }
  });
  const [project, component, language] = parts as [string, string, string];
  return { project, component, language };
}

/** `project/component/language`, for messages and logs. */
export function formatTranslationRef(ref: TranslationRef): string {
  return `${ref.project}/${ref.component}/${ref.language}`;
}

/** The API path of the translation, each segment percent-encoded. */
export function translationApiPath(ref: TranslationRef): string {
  const seg = [ref.project, ref.component, ref.language].map(encodeURIComponent);
  return `/api/translations/${seg.join('/')}/`;
}
