import { MAX_TIMER_MS } from '../shared/clock.js';
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
  maximum?: number;
  description?: string;
  'x-env'?: string;
  'x-secret'?: boolean;
  /** How a running sidecar picks up a change of this key without a restart, if it does. */
  'x-reload'?: string;
  'x-secret-file'?: boolean;
  /** In a list entry whose `in` picks its kind: the kinds that need this field (checked by the config checks). */
  'x-required-for'?: readonly string[];
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

/**
 * Calls `visit` for every property of every object schema under `schema`, depth first. A list
 * (`type: array`) of objects is followed into its items, which stand at index 0 of the path
 * (`['token', 'attach', 0, 'in']`): {@link formatKey} prints that as `token.attach[].in`, and
 * {@link valuesAt} finds the key in every item of a config. Lists of lists are followed too.
 */
export function walkProperties(
  visit: (path: ConfigPath, node: SchemaNode, required: boolean) => void,
  schema: SchemaNode = root,
  path: ConfigPath = [],
): void {
  for (const [key, node] of Object.entries(schema.properties ?? {})) {
    const here = [...path, key];
    visit(here, node, schema.required?.includes(key) ?? false);
    walkInside(visit, node, here);
  }
}

function walkInside(visit: (path: ConfigPath, node: SchemaNode, required: boolean) => void, node: SchemaNode, path: ConfigPath): void {
  if (node.properties) walkProperties(visit, node, path);
  if (node.items) walkInside(visit, node.items, [...path, 0]);
}

/** True when `path` (a schema path) reaches into a list item. */
export function inList(path: ConfigPath): boolean {
  return path.some((segment) => typeof segment === 'number');
}

/** A schema path as the README table and bound checks name it: `token.attach[].in`. */
export function formatKey(path: ConfigPath): string {
  return path.map((s, i) => (typeof s === 'number' ? '[]' : i === 0 ? s : `.${s}`)).join('');
}

/**
 * The values `config` holds at a schema path, each with its own path: an index step (`0`, as
 * {@link walkProperties} gives it) stands for every item of that list, so
 * `['credentials', 0, 'keyFile']` yields `credentials[0].keyFile`, `credentials[1].keyFile`, ...
 * Missing keys yield nothing.
 */
export function valuesAt(config: unknown, path: ConfigPath): Array<{ path: ConfigPath; value: unknown }> {
  let found: Array<{ path: ConfigPath; value: unknown }> = [{ path: [], value: config }];
  for (const segment of path) {
    const next: typeof found = [];
    for (const { path: at, value } of found) {
      if (typeof segment === 'number') {
        if (Array.isArray(value)) value.forEach((item, i) => next.push({ path: [...at, i], value: item }));
      } else if (isRecord(value) && value[segment] !== undefined) {
        next.push({ path: [...at, segment], value: value[segment] });
      }
    }
    found = next;
  }
  return found;
}

export interface EnvBinding {
  path: ConfigPath;
  env: string;
  node: SchemaNode;
}

/**
 * Every key that an environment variable can override, in schema order. Keys inside list items
 * have none: one variable cannot say which item it means (an `x-env` there is ignored).
 */
export function envBindings(schema: SchemaNode = root): EnvBinding[] {
  const out: EnvBinding[] = [];
  walkProperties((path, node) => {
    const env = node['x-env'];
    if (env !== undefined && !inList(path)) out.push({ path, env, node });
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
 * and on SIGHUP), as `service.keyFile` (`list[1].keyFile` in a list); what a SIGHUP log line lists.
 */
export function rereadFileKeys(config: unknown, schema: SchemaNode = root): string[] {
  const keys: string[] = [];
  walkProperties((path, node) => {
    if (node['x-reload'] !== 'file re-read') return;
    for (const { path: at, value } of valuesAt(config, path)) if (typeof value === 'string') keys.push(formatPath(at));
  }, schema);
  return keys;
}

/** Every secret file (`x-secret-file`) `config` names, with its key (`service.keyFile`, `list[1].keyFile`), in schema order. */
export function secretFileKeys(config: unknown, schema: SchemaNode = root): Array<[key: string, file: string]> {
  const out: Array<[string, string]> = [];
  walkProperties((path, node) => {
    if (node['x-secret-file'] !== true) return;
    for (const { path: at, value } of valuesAt(config, path)) if (typeof value === 'string') out.push([formatPath(at), value]);
  }, schema);
  return out;
}

/**
 * Every millisecond key (`...Ms`) and every seconds key (`...Seconds`, each becomes a timer)
 * under `schema`, list items included, whose maximum is missing or above what a Node timer can
 * hold: Node fires a longer timer after 1 ms (docs/traps.md T15). Each entry says what to add.
 * Test-enforced for the real schema (test/config/validate-config.test.ts).
 */
export function unboundedTimerKeys(schema: SchemaNode = root): string[] {
  const out: string[] = [];
  walkProperties((path, node) => {
    const name = String(path[path.length - 1]);
    const unit = name.endsWith('Ms') ? 'ms' : name.endsWith('Seconds') ? 's' : undefined;
    if (unit === undefined) return;
    const bound = unit === 'ms' ? MAX_TIMER_MS : Math.floor(MAX_TIMER_MS / 1000);
    const { maximum } = node;
    if (maximum !== undefined && maximum <= bound) return;
    out.push(`${formatKey(path)}: add \`...${unit === 'ms' ? 'millis' : 'seconds'}\` (maximum ${unit === 'ms' ? 'MAX_TIMER_MS' : 'Math.floor(MAX_TIMER_MS / 1000)'}) to its entry in src/config/schema.ts: Node fires a longer timer after 1 ms (docs/traps.md T15)`);
  }, schema);
  return out;
}

/** True for a plain (non-array, non-null) object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
