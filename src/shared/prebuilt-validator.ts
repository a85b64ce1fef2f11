import type { ValidateFunction } from 'ajv';

/**
 * A JSON Schema validator the build wrote as standalone code (scripts/bundle.mjs), so a sidecar
 * neither loads ajv nor compiles the schema at start-up. `require` is the caller's own
 * (`createRequire(import.meta.url)`), so `file` resolves beside the caller's module. Without that
 * file (sources, i.e. tests) `compile` builds the validator from ajv, which is then required at run
 * time only, and so stays out of the bundles.
 */
export function prebuiltValidator<T>(
  require: NodeJS.Require,
  file: string,
  compile: (ajv: typeof import('ajv')) => ValidateFunction<T>,
): ValidateFunction<T> {
  try {
    return require(file) as ValidateFunction<T>;
  } catch {
    return compile(require('ajv') as typeof import('ajv'));
  }
}
