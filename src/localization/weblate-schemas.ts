import { Type, type Static, type TSchema } from '@sinclair/typebox';

/**
 * The JSON Schemas of the Weblate objects the product reads (see translation-schema.ts for the
 * reader). TypeBox builds them; the build emits this module as plain JSON into the bundles and
 * prebuilds the validator (scripts/bundle.mjs), so neither TypeBox nor ajv runs in a sidecar.
 * This module exports schema values and types only: the build serialises every export.
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
  // `language_code` is not listed: nothing reads it (the summary names `language.code`), so an
  // answer without it is accepted (docs/traps.md T31); `--json` prints it when the server sent it.
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

/** The ajv options the translation validator is built with, here (tests) and by the build. */
export const TRANSLATION_AJV_OPTIONS = { allErrors: false, strict: true };
