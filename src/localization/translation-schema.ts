import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject } from 'ajv';
import { InvalidResponseError } from '../shared/errors.js';

/**
 * A tolerant reader of Weblate's translation object: it validates only the fields the product
 * reads (names, slugs, language codes, counts, percentages, `last_change`, and the links the
 * summary prints) and ignores everything else, present or not. Weblate's serializers differ
 * from release to release (PITFALLS 31; field lists of 2.x to 2026 in
 * test/fixtures/weblate/serializer-fields.json): `source_language` moved from the project to the
 * component in 4.3, VCS fields and `license_url` are null for a read-only token or no licence,
 * link fields come and go. Objects tolerate extra properties (TypeBox's default).
 */

/** `T | null` as one JSON Schema type list, so a wrong value yields one readable ajv error. */
const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, 'null'] });

const Count = () => Type.Integer({ minimum: 0 });
const Percent = () => Type.Number({ minimum: 0, maximum: 100 });
/** ISO 8601 date-time: naive (Weblate's docs), or with the server's offset or `Z` (DRF with USE_TZ). */
const DATE_TIME = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?$';

export const LanguageSchema = Type.Object({
  code: Type.String({ minLength: 1 }),
  name: Type.String(),
});

/** Where it is given: on the component since Weblate 4.3, on the project before. */
const SourceLanguage = () => Type.Optional(Nullable(LanguageSchema));

export const ProjectSchema = Type.Object({
  name: Type.String(),
  slug: Type.String({ minLength: 1 }),
  source_language: SourceLanguage(),
});

export const ComponentSchema = Type.Object({
  name: Type.String(),
  slug: Type.String({ minLength: 1 }),
  project: ProjectSchema,
  source_language: SourceLanguage(),
});

export const TranslationSchema = Type.Object({
  language: LanguageSchema,
  component: ComponentSchema,
  language_code: Type.String({ minLength: 1 }),
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
  // Shown by the summary when present; nothing else depends on them.
  last_author: Type.Optional(Nullable(Type.String())),
  web_url: Type.Optional(Nullable(Type.String())),
  translate_url: Type.Optional(Nullable(Type.String())),
});

export type Language = Static<typeof LanguageSchema>;
export type Project = Static<typeof ProjectSchema>;
export type Component = Static<typeof ComponentSchema>;
export type Translation = Static<typeof TranslationSchema>;

const ajv = new Ajv({ allErrors: false, strict: true });
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

/** The component's source language, else the project's (Weblate < 4.3); undefined when neither says. */
export function sourceLanguage(t: Pick<Translation, 'component'>): Language | undefined {
  return t.component.source_language ?? t.component.project.source_language ?? undefined;
}

/**
 * `last_change` as Unix seconds, null when never changed. Weblate's documented example has no
 * zone; a zone-less value is read as UTC rather than in the sidecar's local time.
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
