import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { isMap, isScalar, isSeq, parse, parseDocument, type Node } from 'yaml';
import { walkProperties, formatPath, type ConfigPath, type SchemaNode } from '../../src/config/walk.js';
import { ConfigError } from '../../src/shared/errors.js';
import { loadConfig } from '../../src/config/load-config.js';

/**
 * config/sidecar.example.yaml documents every key of the schema, so it is checked against the
 * schema itself: it loads through the real loader, mentions every key at its place (optional ones
 * as "# key: value" lines), and every key carries a comment that names its default.
 */
const EXAMPLE = new URL('../../config/sidecar.example.yaml', import.meta.url);
const text = readFileSync(EXAMPLE, 'utf8');

const dir = mkdtempSync(join(tmpdir(), 'b2b-example-config-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** Temp credential files standing in for /run/secrets/b2b/*, passed the way systemd and docker do. */
function credentialEnv(): NodeJS.ProcessEnv {
  const apiKeyFile = join(dir, 'api-key');
  const passwordFile = join(dir, 'password');
  writeFileSync(apiKeyFile, 'example-api-key\n');
  writeFileSync(passwordFile, 'example-password\n');
  return { B2B_API_KEY_FILE: apiKeyFile, B2B_PASSWORD_FILE: passwordFile };
}

interface SchemaKey {
  path: ConfigPath;
  node: SchemaNode;
}

function schemaKeys(): SchemaKey[] {
  const keys: SchemaKey[] = [];
  walkProperties((path, node) => keys.push({ path, node }));
  return keys;
}

const KEY_NAMES = new Set(schemaKeys().map(({ path }) => String(path[path.length - 1])));

/**
 * The example with its commented-out settings switched on: a "# key: ..." line becomes "key: ...",
 * in place, when key is a schema key name. Prose comments stay comments.
 */
function uncommented(source: string): string {
  return source
    .split('\n')
    .map((line) => {
      const m = /^(\s*)#\s?([A-Za-z][A-Za-z0-9]*)(:(?:\s.*)?)$/.exec(line);
      return m && KEY_NAMES.has(m[2]!) ? `${m[1]}${m[2]}${m[3]}` : line;
    })
    .join('\n');
}

/** The YAML node at a schema path; array steps take the first item. */
function nodeAt(root: Node | null, path: ConfigPath): { key: Node; value: unknown } | undefined {
  let current: unknown = root;
  let key: Node | undefined;
  for (const segment of path) {
    if (typeof segment === 'number') {
      if (!isSeq(current)) return undefined;
      current = current.items[segment];
      continue;
    }
    if (!isMap(current)) return undefined;
    const pair = current.items.find((p) => isScalar(p.key) && p.key.value === segment);
    if (!pair) return undefined;
    key = pair.key as Node;
    current = pair.value;
  }
  return key ? { key, value: current } : undefined;
}

/** The comment lines directly above `offset`'s line, joined. */
function commentAbove(source: string, offset: number): string {
  const lines = source.slice(0, offset).split('\n');
  lines.pop(); // the key's own line
  const block: string[] = [];
  while (lines.length > 0 && /^\s*#/.test(lines[lines.length - 1]!)) block.unshift(lines.pop()!);
  return block.join(' ');
}

function isSection(node: SchemaNode): boolean {
  return node.type === 'object';
}

/** What a missing key's failure says to add: the lines to put under its section, in the example's own style. */
function missingKey(path: ConfigPath, node: SchemaNode): string {
  const name = String(path[path.length - 1]);
  const parent = path.slice(0, -1).filter((s) => typeof s === 'string').join('.');
  const where = parent === '' ? 'at the top level' : `under \`${parent}:\``;
  const comment = ['#', node.description ?? '<what it does>', ...hints(node)].join(' ');
  const value = isSection(node) ? `${name}:` : node.default === undefined ? `# ${name}: <value>` : `${name}: ${JSON.stringify(node.default)}`;
  return `${formatPath(path)}: add ${where} in config/sidecar.example.yaml:\n  ${comment}\n  ${value}`;
}

/** The phrases a key's comment must hold: "Default N." and "env X" where the schema has them. */
function hints(node: SchemaNode): string[] {
  const parts: string[] = [];
  if (!isSection(node) && node.default !== undefined) parts.push(`Default ${typeof node.default === 'object' ? JSON.stringify(node.default) : String(node.default)}.`);
  if (node['x-env'] !== undefined) parts.push(`env ${node['x-env']}`);
  return parts;
}

/** ', naming "Default N." and "env X"' for a key that has them, else ''. */
function defaultHint(node: SchemaNode): string {
  const parts = hints(node).map((h) => `"${h}"`);
  return parts.length > 0 ? `, naming ${parts.join(' and ')}` : '';
}

describe('config/sidecar.example.yaml', () => {
  it('loads through the real config loader once the credential files exist', async () => {
    let config;
    try {
      config = await loadConfig(EXAMPLE.pathname, credentialEnv());
    } catch (err) {
      if (err instanceof ConfigError) assert.fail(`the example is invalid:\n${err.problems.join('\n')}`);
      throw err;
    }
    assert.equal(config.service.baseUrl, 'https://api.example.com');
    assert.equal(config.listen.host, '127.0.0.1', 'the proxy listener stays on loopback by default');
  });

  it('without the credential files it fails only on those files', async () => {
    await assert.rejects(loadConfig(EXAMPLE.pathname, {}), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.ok(err.problems.length > 0);
      for (const problem of err.problems) assert.match(problem, /^credentials\.(apiKeyFile|passwordFile) /);
      return true;
    });
  });

  it('uses the documented /run/secrets/b2b paths for the credential files', () => {
    const raw = parse(text) as { credentials: Record<string, string> };
    assert.equal(raw.credentials.apiKeyFile, '/run/secrets/b2b/api-key');
    assert.equal(raw.credentials.passwordFile, '/run/secrets/b2b/password');
    assert.equal(raw.credentials.apiKey, undefined, 'inline secrets only as commented-out alternatives');
    assert.equal(raw.credentials.password, undefined, 'inline secrets only as commented-out alternatives');
  });

  it('mentions every schema key at its place, set or as a "# key:" line', () => {
    const all = parseDocument(uncommented(text), { uniqueKeys: true });
    assert.deepEqual(all.errors.map((e) => e.message), [], 'the example with its optional lines uncommented is valid YAML');
    const missing = schemaKeys().filter(({ path }) => nodeAt(all.contents, path) === undefined).map(({ path, node }) => missingKey(path, node));
    assert.deepEqual(missing, [], 'schema keys missing from config/sidecar.example.yaml');
  });

  it('documents every key in the comment above it, naming the default where there is one', () => {
    const source = uncommented(text);
    const all = parseDocument(source);
    const problems: string[] = [];
    for (const { path, node } of schemaKeys()) {
      const found = nodeAt(all.contents, path);
      if (!found?.key.range) continue; // reported by the previous test
      const comment = commentAbove(source, found.key.range[0]);
      const line = source.slice(0, found.key.range[0]).split('\n').length;
      const key = `${formatPath(path)} (config/sidecar.example.yaml line ${line})`;
      if (comment === '') {
        problems.push(`${key}: add a comment line above it saying what it does${defaultHint(node)}`);
        continue;
      }
      if (isSection(node) || node.default === undefined) continue;
      const def = node.default;
      if (typeof def === 'object') {
        if (!/Default/.test(comment)) problems.push(`${key}: add "Default ${JSON.stringify(def)}" (or the default in words) to the comment above it`);
      } else if (!comment.includes(`Default ${String(def)}`)) {
        problems.push(`${key}: add "Default ${String(def)}" to the comment above it`);
      }
      const envName = node['x-env'];
      if (envName !== undefined && !comment.includes(`env ${envName}`)) problems.push(`${key}: add "env ${envName}" to the comment above it`);
    }
    assert.deepEqual(problems, []);
  });

  it('sets each key it spells out to the schema default, except the documented choices', async () => {
    // Values the example deliberately sets to something other than the default (or that have none).
    const chosen = new Set(['service.baseUrl', 'credentials.apiKeyFile', 'credentials.passwordFile']);
    const raw = parse(text) as unknown;
    const differing: string[] = [];
    for (const { path, node } of schemaKeys()) {
      if (path.some((s) => typeof s === 'number') || isSection(node)) continue;
      let value: unknown = raw;
      for (const segment of path) value = (value as Record<string, unknown> | undefined)?.[segment as string];
      const key = formatPath(path);
      if (value === undefined || chosen.has(key)) continue;
      if (JSON.stringify(value) !== JSON.stringify(node.default)) differing.push(`${key}: ${JSON.stringify(value)} ≠ default ${JSON.stringify(node.default)}`);
    }
    assert.deepEqual(differing, []);
  });
});
