import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { InvalidResponseError } from '../errors.js';

/**
 * Schema of Weblate's translation instance (seed §2.5) with its nested language, component and
 * project objects. Objects keep TypeBox's default of tolerating extra properties: Weblate adds
 * fields from release to release and an unknown field must not break the lookup.
 */

/** `T | null` as one JSON Schema type list, so a wrong value yields one readable ajv error. */
const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });

const Url = () => Type.String({ format: 'uri' });
const Count = () => Type.Integer({ minimum: 0 });
const Percent = () => Type.Number({ minimum: 0, maximum: 100 });
/** ISO 8601 date-time; Weblate sends it without a zone, a zone is accepted too. */
const DATE_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?$';

export const LanguageSchema = Type.Object({
  code: Type.String({ minLength: 1 }),
  name: Type.String(),
  direction: Type.String(),
  web_url: Url(),
  url: Url(),
});

export const ProjectSchema = Type.Object({
  name: Type.String(),
  slug: Type.String({ minLength: 1 }),
  // The project's own site is free text in Weblate and may be empty, so no URL format here.
  web: Type.String(),
  source_language: LanguageSchema,
  web_url: Url(),
  url: Url(),
  components_list_url: Url(),
  repository_url: Url(),
  statistics_url: Url(),
  changes_list_url: Url(),
});

export const ComponentSchema = Type.Object({
  name: Type.String(),
  slug: Type.String({ minLength: 1 }),
  project: ProjectSchema,
  vcs: Nullable(Type.String()),
  repo: Nullable(Type.String()),
  // Empty when the component is not exported over git, so no URL format.
  git_export: Type.String(),
  branch: Nullable(Type.String()),
  filemask: Nullable(Type.String()),
  template: Type.String(),
  new_base: Type.String(),
  file_format: Type.String(),
  license: Type.String(),
  license_url: Type.String(),
  web_url: Url(),
  url: Url(),
  repository_url: Url(),
  translations_url: Url(),
  statistics_url: Url(),
  lock_url: Url(),
  changes_list_url: Url(),
});

export const TranslationSchema = Type.Object({
  language: LanguageSchema,
  component: ComponentSchema,
  language_code: Type.String({ minLength: 1 }),
  filename: Type.String(),
  revision: Type.String(),
  web_url: Url(),
  share_url: Url(),
  translate_url: Url(),
  url: Url(),
  is_template: Type.Boolean(),
  total: Count(),
  total_words: Count(),
  translated: Count(),
  translated_words: Count(),
  translated_percent: Percent(),
  fuzzy: Count(),
  fuzzy_words: Count(),
  fuzzy_percent: Percent(),
  failing_checks: Count(),
  failing_checks_words: Count(),
  failing_checks_percent: Percent(),
  have_suggestion: Count(),
  have_comment: Count(),
  // Null for a translation nobody has changed yet.
  last_change: Nullable(Type.String({ pattern: DATE_TIME })),
  last_author: Nullable(Type.String()),
  repository_url: Url(),
  file_url: Url(),
  statistics_url: Url(),
  changes_list_url: Url(),
  units_list_url: Url(),
});

export type Language = Static<typeof LanguageSchema>;
export type Project = Static<typeof ProjectSchema>;
export type Component = Static<typeof ComponentSchema>;
export type Translation = Static<typeof TranslationSchema>;

// ajv-formats ships CommonJS with `default` on the module object under NodeNext.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
const ajv = new Ajv({ allErrors: false, strict: true });
addFormats(ajv, ['uri']);
const validate = ajv.compile<Translation>(TranslationSchema);

/**
 * Validates a decoded translation answer. Throws {@link InvalidResponseError} naming the first
 * bad field in dotted form (`component.project.slug`, `translated_percent`), so a malformed
 * answer is never shown or exported as if it were fine.
 */
export function parseTranslation(json: unknown): Translation {
  if (!validate(json)) {
    const { field, reason } = describe(validate.errors?.[0]);
    throw new InvalidResponseError(field, reason);
  }
  if (json.last_change !== null && lastChangeEpochSeconds(json) === undefined) {
    throw new InvalidResponseError('last_change', 'is not a valid date-time');
  }
  return json;
}

/**
 * `last_change` as Unix seconds, null when never changed. Weblate writes ISO 8601 without a zone;
 * its API serialises in UTC, so a zone-less value is read as UTC rather than in local time.
 */
export function lastChangeEpochSeconds(t: Pick<Translation, 'last_change'>): number | null | undefined {
  if (t.last_change === null) return null;
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/.test(t.last_change) ? t.last_change : `${t.last_change}Z`;
  const ms = Date.parse(zoned);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

function describe(error: ErrorObject | undefined): { field: string; reason: string } {
  if (!error) return { field: '(body)', reason: 'is invalid' };
  const path = error.instancePath.split('/').slice(1).map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (error.keyword === 'required') {
    path.push(String((error.params as { missingProperty: string }).missingProperty));
    return { field: path.join('.'), reason: 'is missing' };
  }
  return { field: path.length > 0 ? path.join('.') : '(body)', reason: error.message ?? 'is invalid' };
}
