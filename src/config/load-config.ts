import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, visit, type Document } from 'yaml';
import { CREDENTIAL_ID_PATTERN } from './credential-id.js';
import { validateConfig, type Config } from './validate-config.js';
import { hostProblems } from './host-checks.js';
import { envBindings, formatPath, formatProblem, isRecord, schemaAt, valuesAt, walkProperties, type ConfigPath, type SchemaNode } from './walk.js';
import { ConfigError } from '../shared/errors.js';
import { FileRefusedError, readBoundedFile } from '../shared/bounded-file.js';

/**
 * Loads the configuration: the YAML file (JSON is YAML too, so `.json` files load the same
 * way), then every `x-env` environment override, then {@link validateConfig}.
 * `path` undefined means env only (containers). An empty env var counts as unset, as
 * docker-compose's `${VAR}` expands a missing variable to "".
 * `...File` keys stay paths: the credential store re-reads them on rotation.
 * This is the one validation entry of every command (`check-config`, `run`, `token`, `doctor`),
 * so they all reach the same verdict.
 *
 * @throws ConfigError listing every problem: file, env coercion and validation together.
 */
export async function loadConfig(path: string | undefined, env: NodeJS.ProcessEnv): Promise<Config> {
  const { data, problems: fileProblems, keyLines } = path === undefined ? { data: {}, problems: [], keyLines: new Map<string, number>() } : await readConfigFile(path);
  // Before the environment and the credentials directory change it: what the file itself holds.
  const exposed = path === undefined ? undefined : readableInlineSecrets(path, data);
  const replaced: string[] = [];
  const problems = [...fileProblems, ...applyEnv(data, env, replaced)];
  applyCredentialsDirectory(data, env, replaced);
  let config: Config | undefined;
  try {
    config = validateConfig(data);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems.map((p) => withKeyLine(p, keyLines, path)));
  }
  problems.push(...await hostProblems(data));
  if (problems.length > 0 || config === undefined) throw new ConfigError(problems.map((p) => withCredentialsWayOut(p, env, data)));
  if (replaced.length > 0) replacements.set(config, replaced);
  if (exposed) exposedSecrets.set(config, exposed);
  return config;
}

/** Where a command that only reads the running sidecar (`status`, `wait`, `healthcheck`) finds its admin listener. */
export interface AdminSection {
  host: string;
  port: number;
}

/**
 * The `admin` section alone, for the commands that only talk to the admin listener: the file's
 * `admin` keys plus their `B2B_*` overrides, with the schema's defaults (127.0.0.1:9464 without a
 * file). Nothing else is validated or read: a config whose credential files are missing or
 * unreadable to this user, or that lacks service.baseUrl, still gives its admin address, so
 * `wait` in an app's unit and `status` on a packaged host work (docs/troubleshooting.md). A
 * malformed admin section is reported by key like any config problem.
 *
 * @throws ConfigError for a file that cannot be read or parsed, or a problem in the admin section.
 */
export async function loadAdminSection(path: string | undefined, env: NodeJS.ProcessEnv): Promise<AdminSection> {
  const { data, keyLines } = path === undefined ? { data: {} as Record<string, unknown>, keyLines: new Map<string, number>() } : await readConfigFile(path);
  const problems = applyEnv(data, env, []).filter(isAdminProblem);
  try {
    validateConfig({ admin: data.admin });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(...err.problems.filter(isAdminProblem).map((p) => withKeyLine(p, keyLines, path)));
  }
  if (problems.length > 0) throw new ConfigError(problems);
  const admin = isRecord(data.admin) ? data.admin : {};
  return {
    host: typeof admin.host === 'string' ? admin.host : String(schemaAt(['admin', 'host'])!.default),
    port: typeof admin.port === 'number' ? admin.port : Number(schemaAt(['admin', 'port'])!.default),
  };
}

/** A problem line about the admin section (`admin.port (B2B_ADMIN_PORT): ...`, `admin: must be object`). */
function isAdminProblem(problem: string): boolean {
  return /^admin(?:[.[ :]|$)/.test(problem);
}

const replacements = new WeakMap<Config, readonly string[]>();
const exposedSecrets = new WeakMap<Config, InlineSecrets>();

/** Secrets written in a config file that other users of the host can read. */
export interface InlineSecrets {
  file: string;
  /** The file's permission bits, e.g. 0o644. */
  mode: number;
  /** The keys holding them, as problems name keys (`credentials.password`). */
  keys: string[];
}

/**
 * The secrets written inline in the config file `config` was loaded from, when every user of the
 * host may read that file (mode o+r): `run` and `check-config` warn, naming each key and the mode
 * (config/warnings.ts), as they do for a readable `...File`. A proxy URL counts only with a
 * password in it. Undefined for a config not made by loadConfig or a file only its owner and group read.
 */
export function inlineSecretsExposed(config: Config): InlineSecrets | undefined {
  return exposedSecrets.get(config);
}

function readableInlineSecrets(path: string, data: Record<string, unknown>): InlineSecrets | undefined {
  let mode: number;
  try {
    mode = statSync(path).mode & 0o777;
  } catch {
    return undefined;
  }
  if ((mode & 0o004) === 0) return undefined;
  const keys: string[] = [];
  walkProperties((keyPath, node) => {
    if (!node['x-secret']) return;
    for (const { path: at, value } of valuesAt(data, keyPath)) {
      if (typeof value === 'string' && value !== '' && holdsSecret(value)) keys.push(formatPath(at));
    }
  });
  return keys.length > 0 ? { file: path, mode, keys } : undefined;
}

/** A URL (a forward proxy) is a secret only with a password in it; `none` or a plain value as written. */
function holdsSecret(value: string): boolean {
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return value !== 'none';
  try {
    return new URL(value).password !== '';
  } catch {
    return true;
  }
}

/**
 * What the environment replaced in the file's choice between a value and its `...File` twin
 * (`B2B_PASSWORD` set while the file names `passwordFile`), one sentence each, so `run` and
 * `check-config` can say which source is used. Empty for a config not made by loadConfig.
 */
export function envReplacements(config: Config): readonly string[] {
  return replacements.get(config) ?? [];
}

/** Never quotes the source or yaml's messages: the value at fault may be a password. */
const QUOTE_HINT = 'quote values that start with * & or !';

/** An unknown key comes from the file (env vars are all known): say on which line it is. */
function withKeyLine(problem: string, keyLines: ReadonlyMap<string, number>, path: string | undefined): string {
  const m = /^(\S+): is not a known key/.exec(problem);
  const line = m && keyLines.get(m[1]!);
  return line ? `${problem} at line ${line} of ${path}` : problem;
}

/** The line of every key in the document, by dotted path as problems name it (`guard.allow[1]`). */
function keyLinesOf(doc: Document, lines: LineCounter): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (node: unknown, path: ConfigPath): void => {
    if (isMap(node)) {
      for (const pair of node.items) {
        if (!isScalar(pair.key)) continue;
        const keyPath = [...path, String(pair.key.value)];
        out.set(formatPath(keyPath), lines.linePos(pair.key.range?.[0] ?? 0).line);
        walk(pair.value, keyPath);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => walk(item, [...path, i]));
    }
  };
  walk(doc.contents, []);
  return out;
}

/** A config file is a few KiB; the largest example with every key is under 20. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;

async function readConfigFile(path: string): Promise<{ data: Record<string, unknown>; problems: string[]; keyLines: Map<string, number> }> {
  let text: string;
  try {
    // Bounded and never blocking, like every file an operator names (docs/traps.md T35).
    text = await readBoundedFile(path, MAX_CONFIG_FILE_BYTES);
  } catch (err) {
    const why = err instanceof FileRefusedError ? (err.reason === 'is a directory, not a regular file' ? 'is a directory' : err.reason) : `cannot be read (${String(err)})`;
    throw new ConfigError([`config file ${path} ${why}`]);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true, lineCounter });
  if (doc.errors.length > 0) {
    // Only the first line of yaml's message: the rest quotes the source, which may hold a secret.
    throw new ConfigError(doc.errors.map((e) => {
      const where = e.linePos ? ` at line ${e.linePos[0].line}, column ${e.linePos[0].col}` : '';
      // yaml's own text names its API (parseAllDocuments()); say what is wrong in the file instead.
      if (e.code === 'MULTIPLE_DOCS') {
        const line = e.linePos ? ` at line ${e.linePos[0].line}` : '';
        return `config file ${path}: holds more than one YAML document (the "---"${line} starts another); keep a single document`;
      }
      const what = (e.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
      return `config file ${path}: invalid YAML${where}: ${what}`;
    }));
  }
  let value: unknown;
  try {
    value = doc.toJS();
  } catch {
    // An unquoted `password: *Secr3t` is an alias; yaml's ReferenceError names it, i.e. the password.
    const lines = unresolvedAliasLines(doc, lineCounter);
    throw new ConfigError(lines.length > 0
      ? lines.map((line) => `config file ${path}: unresolved YAML alias at line ${line}: ${QUOTE_HINT}`)
      : [`config file ${path}: YAML aliases cannot be resolved: ${QUOTE_HINT}`]);
  }
  if (value === null || value === undefined) return { data: {}, problems: [], keyLines: new Map() };
  if (!isRecord(value)) throw new ConfigError([`config file ${path}: must be a mapping of keys to values`]);
  coerceBooleans(value);
  return { data: value, problems: silentYamlChanges(path, doc, lineCounter), keyLines: keyLinesOf(doc, lineCounter) };
}

/**
 * YAML 1.2 reads `yes`, `on`, `off` as strings; the env vars accept them for booleans, so the
 * file does too (`log.requests: yes`), with the same words. In place.
 */
function coerceBooleans(data: Record<string, unknown>): void {
  walkProperties((path, node) => {
    if (node.type !== 'boolean') return;
    const key = String(path[path.length - 1]);
    // In every item of a list the key is in.
    for (const { value: parent } of valuesAt(data, path.slice(0, -1))) {
      if (!isRecord(parent) || typeof parent[key] !== 'string') continue;
      const value = coerce(parent[key], node);
      if (typeof value === 'boolean') parent[key] = value;
    }
  });
}

/** Lines of aliases (`*name`) with no anchor before them. */
function unresolvedAliasLines(doc: Document, lines: LineCounter): number[] {
  const found: number[] = [];
  visit(doc, {
    Alias(_key, node) {
      if (node.resolve(doc) === undefined) found.push(lines.linePos(node.range?.[0] ?? 0).line);
    },
  });
  return found;
}

/**
 * Unquoted values that YAML reads as something else without an error: `!x` is a tag (dropped,
 * with only a warning) and `&x` an anchor (dropped silently). A scalar anchor nothing refers to
 * is such a value; so is every unresolved tag. Reported by line only.
 */
function silentYamlChanges(path: string, doc: Document, lines: LineCounter): string[] {
  const problems = doc.warnings.map((w) => {
    const where = w.linePos ? ` at line ${w.linePos[0].line}` : '';
    return w.code === 'TAG_RESOLVE_FAILED'
      ? `config file ${path}: unknown YAML tag${where} changes the value: ${QUOTE_HINT}`
      : `config file ${path}: YAML warning ${w.code}${where}`;
  });
  const used = new Set<string>();
  const anchors: Array<{ name: string; line: number }> = [];
  visit(doc, {
    Alias(_key, node) {
      used.add(node.source);
    },
    Node(_key, node) {
      if (isScalar(node) && node.anchor) anchors.push({ name: node.anchor, line: lines.linePos(node.range?.[0] ?? 0).line });
    },
  });
  for (const { name, line } of anchors) {
    if (!used.has(name)) problems.push(`config file ${path}: unused YAML anchor at line ${line} changes the value: ${QUOTE_HINT}`);
  }
  return problems;
}

/**
 * Applies every set `x-env` variable to `data` in place; returns coercion problems and pushes onto
 * `replaced` a sentence for every file setting an env var displaced.
 */
function applyEnv(data: Record<string, unknown>, env: NodeJS.ProcessEnv, replaced: string[]): string[] {
  const problems: string[] = [];
  const fromEnv = new Set<string>();
  for (const { path, env: name, node } of envBindings()) {
    const text = env[name];
    if (text === undefined || text === '') continue;
    // One variable cannot say which set of a list it means (config/credential-sets.ts).
    if (path[0] === 'credentials' && Array.isArray(data.credentials)) {
      problems.push(formatProblem(path, 'applies to the object form of credentials only: with a list of credential sets, set each set\'s keys in the config file'));
      continue;
    }
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
    if (!isRecord(parent) || parent[twin] === undefined) continue;
    delete parent[twin];
    const by = envBindings().find((b) => b.path.join('.') === key)?.env;
    replaced.push(`${[...path, twin].join('.')} from the config file is ignored: ${by} in the environment sets ${key}, which is used instead`);
  }
  return problems;
}

/** The file names `LoadCredential=` gives the credentials in the shipped systemd unit. */
const SYSTEMD_CREDENTIALS = [['apiKey', 'api-key'], ['password', 'password']] as const;

/**
 * systemd's `LoadCredential=` puts the credentials in `$CREDENTIALS_DIRECTORY`, which systemd sets
 * only for a process it passed credentials to. The shipped unit points `B2B_*_FILE` at them; a
 * command started without those variables (`systemd-run -p LoadCredential=… b2b-sidecar doctor …`,
 * to diagnose with exactly what the service reads) finds `api-key` and `password` there. A file
 * there replaces the config file's choice (`apiKeyFile` in the shipped example config, or an
 * inline value), as the unit's variables do, and is said like them; a credential the environment
 * sets wins.
 */
function applyCredentialsDirectory(data: Record<string, unknown>, env: NodeJS.ProcessEnv, replaced: string[]): void {
  const dir = env.CREDENTIALS_DIRECTORY;
  if (!dir) return;
  const listed = getAt(data, ['credentials']);
  if (Array.isArray(listed)) {
    applyCredentialsDirectoryToSets(listed, dir, replaced);
    return;
  }
  for (const [key, name] of SYSTEMD_CREDENTIALS) {
    const byEnv = envBindings().some((b) => b.path[0] === 'credentials' && (b.path[1] === key || b.path[1] === `${key}File`) && env[b.env]);
    if (byEnv) continue;
    const file = join(dir, name);
    if (!existsSync(file)) continue;
    const credentials = getAt(data, ['credentials']);
    if (isRecord(credentials)) {
      for (const set of [key, `${key}File`]) {
        if (credentials[set] === undefined) continue;
        delete credentials[set];
        replaced.push(`credentials.${set} from the config file is ignored: ${name} in $CREDENTIALS_DIRECTORY (systemd's LoadCredential=) sets credentials.${key}File, which is used instead`);
      }
    }
    setAt(data, ['credentials', `${key}File`], file);
  }
}

/**
 * The list form under systemd: `LoadCredential=<id>.api-key:FILE` and `<id>.password` give one
 * set its credentials (an id is a file name: [a-z0-9][a-z0-9_-]*), replacing that set's choice in
 * the config file, said like the single form's. The single form's `api-key` and `password` name
 * no set: they are left unused, and that is said too.
 */
function applyCredentialsDirectoryToSets(sets: unknown[], dir: string, replaced: string[]): void {
  sets.forEach((set, i) => {
    if (!isRecord(set) || !validId(set.id)) return; // validation names it
    for (const [key, name] of SYSTEMD_CREDENTIALS) {
      const file = join(dir, `${set.id}.${name}`);
      if (!existsSync(file)) continue;
      for (const own of [key, `${key}File`]) {
        if (set[own] === undefined) continue;
        delete set[own];
        replaced.push(`credentials[${i}].${own} from the config file is ignored: ${set.id}.${name} in $CREDENTIALS_DIRECTORY (systemd's LoadCredential=) sets credentials[${i}].${key}File, which is used instead`);
      }
      set[`${key}File`] = file;
    }
  });
  for (const [, name] of SYSTEMD_CREDENTIALS) {
    if (existsSync(join(dir, name))) replaced.push(`${name} in $CREDENTIALS_DIRECTORY is not used: the config lists credential sets, and a set's is named <id>.${name} (LoadCredential=<id>.${name}:FILE)`);
  }
}

/** A set id the schema takes: only such an id names a file in $CREDENTIALS_DIRECTORY. */
function validId(id: unknown): id is string {
  return typeof id === 'string' && new RegExp(CREDENTIAL_ID_PATTERN).test(id);
}

/**
 * A credential file that does not exist: says where else it can come from. Under systemd the unit
 * passes the credentials through `LoadCredential=`, which a command started by hand does not get.
 */
function withCredentialsWayOut(problem: string, env: NodeJS.ProcessEnv, data: Record<string, unknown>): string {
  const inSet = /^credentials\[(\d+)\]\.(apiKey|password)File: file \S+ does not exist$/.exec(problem);
  if (inSet) {
    const listed = getAt(data, ['credentials']);
    const set = Array.isArray(listed) ? listed[Number(inSet[1])] : undefined;
    const id = isRecord(set) && validId(set.id) ? set.id : '<id>';
    const name = `${id}.${SYSTEMD_CREDENTIALS.find(([key]) => key === inSet[2])![1]}`;
    return env.CREDENTIALS_DIRECTORY
      ? `${problem}, and $CREDENTIALS_DIRECTORY (${env.CREDENTIALS_DIRECTORY}) holds no ${name}: pass it with LoadCredential=${name}:FILE`
      : `${problem} (under systemd, pass it with LoadCredential=${name}:FILE: a file of that name in $CREDENTIALS_DIRECTORY is used instead)`;
  }
  const m = /^credentials\.(apiKey|password)File \(\S+\): file \S+ does not exist$/.exec(problem);
  if (!m) return problem;
  const name = SYSTEMD_CREDENTIALS.find(([key]) => key === m[1])![1];
  return env.CREDENTIALS_DIRECTORY
    ? `${problem}, and $CREDENTIALS_DIRECTORY (${env.CREDENTIALS_DIRECTORY}) holds no ${name}: pass it with LoadCredential=${name}:/etc/b2b-sidecar/${name}`
    : `${problem} (under systemd, run the command through systemd-run with LoadCredential=${name}:FILE, as the README's doctor line does: a file in $CREDENTIALS_DIRECTORY is used instead)`;
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
