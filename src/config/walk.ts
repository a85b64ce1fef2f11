import { ConfigSchema } from './schema.js';

/**
 * The parts of a (TypeBox-built) JSON Schema node that the config code reads. TypeBox schemas
 * are plain JSON Schema objects, so validation, env overrides, redaction and the README table
 * can all be driven by walking `ConfigSchema` instead of repeating key names.
 */
export interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  const?: unknown;
  default?: unknown;
  description?: string;
  'x-env'?: string;
  'x-secret'?: boolean;
  /** How a running sidecar picks up a change of this key without a restart, if it does. */
  'x-reload'?: string;
  'x-secret-file'?: boolean;
}

/** A location in the config: object keys and array indexes. */
export type ConfigPath = ReadonlyArray<string | number>;
/** Where a check reports a problem: the key's path and why. */
export type Report = (path: ConfigPath, reason: string) => void;

const root = ConfigSchema as unknown as SchemaNode;

/** The schema node at `path` (array indexes step into `items`), or undefined for unknown keys. */
export function schemaAt(path: ConfigPath, schema: SchemaNode = root): SchemaNode | undefined {
  let node: SchemaNode | undefined = schema;
  for (const segment of path) {
    if (node === undefined) return undefined;
    node = typeof segment === 'number' ? node.items : node.properties?.[segment];
  }
  return node;
}

/** `['guard', 'allow', 1]` → `guard.allow[1]`. */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const segment of path) {
    out += typeof segment === 'number' ? `[${segment}]` : out === '' ? segment : `.${segment}`;
  }
  return out === '' ? '(root)' : out;
}

/** One problem line: `"<dotted.key> (<ENV_VAR>): <reason>"`, the env part only when the key has `x-env`. */
export function formatProblem(path: ConfigPath, reason: string): string {
  const envName = schemaAt(path)?.['x-env'];
  return `${formatPath(path)}${envName ? ` (${envName})` : ''}: ${reason}`;
}

/** Calls `visit` for every property of every object schema under `schema`, depth first. */
export function walkProperties(
  visit: (path: ConfigPath, node: SchemaNode, required: boolean) => void,
  schema: SchemaNode = root,
  path: ConfigPath = [],
): void {
  for (const [key, node] of Object.entries(schema.properties ?? {})) {
    const here = [...path, key];
    visit(here, node, schema.required?.includes(key) ?? false);
    walkProperties(visit, node, here);
    // Array items are shown with index 0; callers that print keys render it as `[]`.
    if (node.items?.properties) walkProperties(visit, node.items, [...here, 0]);
  }
}

export interface EnvBinding {
  path: ConfigPath;
  env: string;
  node: SchemaNode;
}

/** Every key that an environment variable can override, in schema order. */
export function envBindings(schema: SchemaNode = root): EnvBinding[] {
  const out: EnvBinding[] = [];
  walkProperties((path, node) => {
    const env = node['x-env'];
    if (env !== undefined) out.push({ path, env, node });
  }, schema);
  return out;
}

/** A deep copy of `value` with every `x-secret` value under `schema` replaced by `[REDACTED]`. */
export function redactBySchema(value: unknown, schema: SchemaNode = root): unknown {
  if (schema['x-secret'] && value !== undefined) return '[REDACTED]';
  if (Array.isArray(value)) return value.map((item) => (schema.items ? redactBySchema(item, schema.items) : structuredClone(item)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const child = schema.properties?.[key];
      out[key] = child ? redactBySchema(item, child) : structuredClone(item);
    }
    return out;
  }
  return value;
}

/**
 * The keys of every file `config` names that a running sidecar re-reads (`x-reload`: on change
 * and on SIGHUP), as `service.keyFile`; what a SIGHUP log line lists.
 */
export function rereadFileKeys(config: unknown, schema: SchemaNode = root): string[] {
  const keys: string[] = [];
  walkProperties((path, node) => {
    if (node['x-reload'] !== 'file re-read') return;
    let value: unknown = config;
    for (const segment of path) value = isRecord(value) ? value[segment] : undefined;
    if (typeof value === 'string') keys.push(formatPath(path));
  }, schema);
  return keys;
}

/** Every secret file (`x-secret-file`) `config` names, with its key (`service.keyFile`), in schema order. */
export function secretFileKeys(config: unknown, schema: SchemaNode = root): Array<[key: string, file: string]> {
  const out: Array<[string, string]> = [];
  walkProperties((path, node) => {
    if (node['x-secret-file'] !== true) return;
    let value: unknown = config;
    for (const segment of path) value = isRecord(value) ? value[segment] : undefined;
    if (typeof value === 'string') out.push([formatPath(path), value]);
  }, schema);
  return out;
}

/** True for a plain (non-array, non-null) object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
