import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { InvalidResponseError } from '../shared/errors.js';
import { prebuiltValidator } from '../shared/prebuilt-validator.js';
import { TRANSLATION_AJV_OPTIONS, TranslationSchema, type Language, type Translation } from './weblate-schemas.js';

export { TranslationSchema } from './weblate-schemas.js';
export type { Component, Language, Project, Translation } from './weblate-schemas.js';

/**
 * A tolerant reader of Weblate's translation object: it validates only the fields the product
 * reads (names, slugs, language codes, counts, percentages, `last_change`, and the links the
 * summary prints) and ignores everything else, present or not. Weblate's serializers differ
 * from release to release (docs/traps.md T31; field lists of 2.x to 2026 in
 * test/fixtures/weblate/serializer-fields.json): `source_language` moved from the project to the
 * component in 4.3, VCS fields and `license_url` are null for a read-only token or no licence,
 * link fields come and go. Objects tolerate extra properties (TypeBox's default).
 */

/**
 * The validator, made once at its first use: prebuilt by the build as
 * dist/lib/translation-validator.cjs (one level up from dist/lib/localization/ and from the bundles
 * in dist/lib/bundle/), compiled here from sources (tests).
 */
let compiled: ValidateFunction<Translation> | undefined;
function validator(): ValidateFunction<Translation> {
  compiled ??= prebuiltValidator<Translation>(createRequire(import.meta.url), '../translation-validator.cjs',
    ({ Ajv }) => new Ajv(TRANSLATION_AJV_OPTIONS).compile<Translation>(TranslationSchema));
  return compiled;
}

/**
 * Validates a decoded translation answer. Throws {@link InvalidResponseError} naming the first
 * bad field in dotted form (`component.project.slug`, `translated_percent`), so a malformed
 * answer is never shown or exported as if it were fine.
 */
export function parseTranslation(json: unknown): Translation {
  const validate = validator();
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
