import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import { ConfigSchema, type Config } from './schema.js';
import { applyAliases } from './aliases.js';
import { checkSemantics } from './checks.js';
import { editDistance } from './env-warnings.js';
import { formatProblem, redactBySchema, schemaAt, type ConfigPath } from './walk.js';
import { ConfigError } from '../shared/errors.js';
import { prebuiltValidator } from '../shared/prebuilt-validator.js';

export type { Config } from './schema.js';

/** The ajv options the validator is built with, here and by `scripts/bundle.mjs` ahead of time. */
// allowUnionTypes: `credentials` is an object (one set) or a list (config/credential-sets-schema.ts).
export const AJV_OPTIONS = { allErrors: true, useDefaults: true, strict: true, allowUnionTypes: true } as const;

/** Declares the project's annotation keywords so strict mode accepts them. */
export function addAnnotationKeywords(ajv: Ajv): Ajv {
  ajv.addKeyword({ keyword: 'x-env', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-secret', schemaType: 'boolean' });
  ajv.addKeyword({ keyword: 'x-reload', schemaType: 'string' });
  ajv.addKeyword({ keyword: 'x-secret-file', schemaType: 'boolean' });
  ajv.addKeyword({ keyword: 'x-required-for', schemaType: 'array' });
  return ajv;
}

/**
 * Compiled once per process: the schema is static. allErrors so every problem is reported at
 * once; useDefaults fills in every default. The build writes the same validator as standalone
 * code in dist/lib/ (dist/lib/config-validator.cjs: one level up from dist/lib/config/ and from the
 * bundles' dist/lib/bundle/) so the CLI does not compile it at every start (~60 ms); from sources (tests) it
 * is compiled here.
 */
const validate: ValidateFunction = prebuiltValidator(createRequire(import.meta.url), '../config-validator.cjs',
  // validateSchema: false skips compiling the meta-schema; test/config/validate-config.test.ts checks it instead.
  ({ Ajv: AjvClass }) => addAnnotationKeywords(new AjvClass({ ...AJV_OPTIONS, validateSchema: false })).compile(ConfigSchema));

/**
 * Validates raw configuration (parsed YAML/JSON plus env overrides) and returns it with every
 * default filled in and every deprecated key's value at the key that replaced it (aliases.ts).
 * The input is not modified.
 *
 * @throws ConfigError listing every problem as `"<dotted.key> (<ENV_VAR>): <reason>"`.
 */
export function validateConfig(raw: unknown): Config {
  let data: unknown;
  try {
    data = structuredClone(raw ?? {});
  } catch {
    throw new ConfigError(['(root): must be plain data (as parsed from YAML or JSON)']);
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new ConfigError(['(root): must be a mapping of keys to values']);
  }
  const problems: string[] = validate(data) ? [] : schemaProblems(validate.errors ?? [], data);
  checkSemantics(data as Record<string, unknown>, (path, reason) => problems.push(formatProblem(path, reason)));
  if (problems.length > 0) throw new ConfigError([...new Set(problems)]);
  applyAliases(data as Record<string, unknown>);
  return data as Config;
}

/**
 * A deep copy of the effective config with every `x-secret` value replaced by `[REDACTED]`.
 * Driven by the schema's annotations, so a new secret key is redacted without code changes.
 */
export function redactConfig(config: Config): unknown {
  return redactBySchema(config);
}

/** Turns ajv errors into one problem line per key. */
function schemaProblems(errors: ErrorObject[], data: unknown): string[] {
  // A failed union reports each branch too; the union's own error says it better.
  const unions = new Set(errors.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const out: string[] = [];
  for (const error of errors) {
    if (unions.has(error.instancePath) && error.keyword !== 'anyOf') continue;
    const path = parsePointer(error.instancePath);
    const params = error.params as Record<string, unknown>;
    if (error.keyword === 'required') {
      for (const missing of requiredLeaves([...path, String(params.missingProperty)])) {
        out.push(formatProblem(missing, 'is required'));
      }
    } else if (error.keyword === 'additionalProperties') {
      out.push(formatProblem([...path, String(params.additionalProperty)], unknownKeyReason(path, String(params.additionalProperty))));
    } else if (error.keyword === 'anyOf') {
      out.push(formatProblem(path, unionReason(path) ?? String(error.message)));
    } else if (error.keyword === 'type' && params.type === 'string') {
      out.push(formatProblem(path, notTextReason(valueAt(data, path))));
    } else {
      out.push(formatProblem(path, String(error.message)));
    }
  }
  return out;
}

/**
 * A missing required section is reported as its missing required keys (`service.baseUrl
 * (B2B_BASE_URL)` rather than `service`), so the env var that would fix it is named.
 */
function requiredLeaves(path: ConfigPath): ConfigPath[] {
  const node = schemaAt(path);
  const required = (node?.required ?? []).filter((key) => node?.properties?.[key]?.default === undefined);
  if (required.length === 0) return [path];
  return required.flatMap((key) => requiredLeaves([...path, key]));
}

/**
 * Suggests a sibling key: one that differs only in case (`apikey`), else the nearest within two
 * edits (`tokne`, `renewat`), which covers swapped, missing and doubled letters.
 */
function unknownKeyReason(parent: ConfigPath, key: string): string {
  const known = Object.keys(schemaAt(parent)?.properties ?? {});
  const lower = key.toLowerCase();
  let near = known.find((k) => k.toLowerCase() === lower);
  if (!near) {
    let best = MAX_KEY_EDITS + 1;
    for (const k of known) {
      const d = editDistance(lower, k.toLowerCase());
      if (d < best) [near, best] = [k, d];
    }
  }
  return near ? `is not a known key (did you mean ${near}?)` : 'is not a known key';
}

/** A suggestion further away than this is a guess, not a typo. */
const MAX_KEY_EDITS = 2;

/**
 * YAML reads an unquoted `password: 012345` as the number 12345 and `apiKey: yes` as true: the
 * value is never echoed (it may be a secret), the fix is named.
 */
function notTextReason(value: unknown): string {
  if (typeof value === 'number') return 'must be text, but YAML read an unquoted number here (leading zeros are lost): quote it, e.g. "012345"';
  if (typeof value === 'boolean') return 'must be text, but YAML read an unquoted yes/no/true/false here: quote it';
  if (value === null) return 'has no value: give one or leave the key out';
  return 'must be text (a string)';
}

function valueAt(data: unknown, path: ConfigPath): unknown {
  let value = data;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[segment];
  }
  return value;
}

/** `must be one of: a, b` for a union of literals (log.level, attach[].in). */
function unionReason(path: ConfigPath): string | undefined {
  const branches = schemaAt(path)?.anyOf;
  if (!branches?.every((b) => b.const !== undefined)) return undefined;
  return `must be one of: ${branches.map((b) => String(b.const)).join(', ')}`;
}

/** JSON Pointer (`/guard/allow/1`) → path; all-digit segments are array indexes. */
function parsePointer(pointer: string): ConfigPath {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}
