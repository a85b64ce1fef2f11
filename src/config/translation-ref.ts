import { SidecarError } from '../shared/errors.js';

/**
 * A `project/[category/]component/language` reference that is not valid slugs (exit code 2). A
 * usage error, found before any request: it lives with the parser that config checks share.
 */
export class TranslationRefError extends SidecarError {
  override name = 'TranslationRefError';
  constructor(reason: string) {
    super('SIDECAR_ERR_L10N_BAD_REF', 400, `invalid translation reference: ${reason}`);
  }
}

/** One translation instance: one language of one component of one project. */
export interface TranslationRef {
  project: string;
  /**
   * The component slug; for a component inside a category (Weblate 5.0+) its path below the
   * project, category slugs first: `docs/usage`.
   */
  component: string;
  language: string;
}

const SLUG = /^[A-Za-z0-9_.-]+$/;
/** The category separator inside one path segment: `%2F`, or `%252F` as Weblate's API URLs show it. */
const ENCODED_SLASH = /%(?:25)?2F/gi;
const USAGE = 'project/component/language or project/category/component/language';

/**
 * Parses `project/component/language`, `project/category/component/language` (categories may
 * nest) or the encoded form `project/category%2Fcomponent/language`. Each part must be a slug
 * (letters, digits, `_`, `.`, `-`, and not `.` or `..`), so an argument can never steer the
 * lookup into another API path (`../users`, `a//b`). Throws {@link TranslationRefError}.
 */
export function parseTranslationRef(text: string): TranslationRef {
  const parts = text.split('/');
  if (parts.length < 3) throw new TranslationRefError(`${JSON.stringify(text)} is not ${USAGE}`);
  const project = parts[0]!;
  const language = parts[parts.length - 1]!;
  const component = parts.slice(1, -1).join('/').replace(ENCODED_SLASH, '/');
  check('project', project);
  for (const piece of component.split('/')) check(component.includes('/') ? 'category or component' : 'component', piece);
  check('language', language);
  return { project, component, language };
}

function check(what: string, part: string): void {
  if (!SLUG.test(part) || part === '.' || part === '..') {
    throw new TranslationRefError(`${what} ${JSON.stringify(part)} is not a slug (letters, digits, _ . -)`);
  }
}

/** `project/[category/]component/language`, for messages, logs and metric labels. */
export function formatTranslationRef(ref: TranslationRef): string {
  return `${ref.project}/${ref.component}/${ref.language}`;
}

/**
 * The API path of the translation. Weblate addresses a component inside a category as one path
 * segment, `category%2Fcomponent` (its `get_reverse_kwargs` joins the slugs with `%2F`), which
 * percent-encoded in the URL is `category%252Fcomponent`, as in Weblate's documentation ("Components
 * and categories" in docs/api.rst). A bare `%2F` would be decoded to `/` before routing and 404.
 */
export function translationApiPath(ref: TranslationRef): string {
  const seg = [ref.project, ref.component.split('/').join('%2F'), ref.language].map(encodeURIComponent);
  return `/api/translations/${seg.join('/')}/`;
}
