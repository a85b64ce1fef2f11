import { readFile } from 'node:fs/promises';
import { parseDocument } from 'yaml';
import { validateConfig, type Config } from './config.js';
import { envBindings, formatProblem, isRecord, schemaAt, type ConfigPath, type SchemaNode } from './config-walk.js';
import { ConfigError } from './errors.js';

/**
 * Loads the configuration: the YAML file (JSON is YAML too, so `.json` files load the same
 * way), then every `x-env` environment override, then {@link validateConfig}.
 * `path` undefined means env only (containers). An empty env var counts as unset, as
 * docker-compose's `${VAR}` expands a missing variable to "".
 * `...File` keys stay paths: the credential store re-reads them on rotation.
 *
 * @throws ConfigError listing every problem: file, env coercion and validation together.
 */
export async function loadConfig(path: string | undefined, env: NodeJS.ProcessEnv): Promise<Config> {
  const data = path === undefined ? {} : await readConfigFile(path);
  const problems = applyEnv(data, env);
  let config: Config;
  try {
    config = validateConfig(data);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError([...problems, ...err.problems]);
    throw err;
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EISDIR' ? 'is a directory' : `cannot be read (${code ?? String(err)})`;
    throw new ConfigError([`config file ${path} ${why}`]);
  }
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    // Only the first line of yaml's message: the rest quotes the source, which may hold a secret.
    throw new ConfigError(doc.errors.map((e) => {
      const where = e.linePos ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
      const what = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      return `config file ${path}: invalid YAML${where}: ${what}`;
    }));
  }
  const value: unknown = doc.toJS();
  if (value === null || value === undefined) return {};
  if (!isRecord(value)) throw new ConfigError([`config file ${path}: must be a mapping of keys to values`]);
  return value;
}

/** Applies every set `x-env` variable to `data` in place; returns coercion problems. */
function applyEnv(data: Record<string, unknown>, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const fromEnv = new Set<string>();
  for (const { path, env: name, node } of envBindings()) {
    const text = env[name];
    if (text === undefined || text === '') continue;
    const value = coerce(text, node);
    if (typeof value === 'object') {
      problems.push(formatProblem(path, node['x-secret'] ? value.problem : `"${text}" ${value.problem}`));
      continue;
    }
    if (setAt(data, path, value)) fromEnv.add(path.join('.'));
  }
  // An env var must be able to replace the file's choice between a value and its ...File twin.
  for (const key of fromEnv) {
    const path = key.split('.');
    const last = path.pop()!;
    const twin = last.endsWith('File') ? last.slice(0, -'File'.length) : `${last}File`;
    if (fromEnv.has([...path, twin].join('.')) || schemaAt([...path, twin]) === undefined) continue;
    const parent = getAt(data, path);
    if (isRecord(parent)) delete parent[twin];
  }
  return problems;
}

type Coerced = string | number | boolean | { problem: string };

/** Env values are strings; convert to the key's schema type. Unions of literals stay strings. */
function coerce(text: string, node: SchemaNode): Coerced {
  const trimmed = text.trim();
  switch (node.type) {
    case 'integer':
      return /^[+-]?\d+$/.test(trimmed) ? Number(trimmed) : { problem: 'is not an integer' };
    case 'number': {
      const n = Number(trimmed);
      return trimmed !== '' && Number.isFinite(n) ? n : { problem: 'is not a number' };
    }
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(trimmed)) return true;
      if (/^(false|0|no|off)$/i.test(trimmed)) return false;
      return { problem: 'is not a boolean (true/false)' };
    default:
      return text;
  }
}

/** Sets a value, creating missing parent objects; leaves non-object parents for ajv to report. */
function setAt(data: Record<string, unknown>, path: ConfigPath, value: unknown): boolean {
  let parent: Record<string, unknown> = data;
  for (const segment of path.slice(0, -1)) {
    const key = String(segment);
    parent[key] ??= {};
    const next = parent[key];
    if (!isRecord(next)) return false;
    parent = next;
  }
  parent[String(path[path.length - 1])] = value;
  return true;
}

function getAt(data: Record<string, unknown>, path: readonly string[]): unknown {
  let value: unknown = data;
  for (const key of path) value = isRecord(value) ? value[key] : undefined;
  return value;
}
