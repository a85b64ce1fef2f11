import { isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { ConfigSchema } from '../../src/config/schema.js';
import { formatPath, walkProperties, type ConfigPath, type SchemaNode } from '../../src/config/walk.js';

/**
 * The check of config/sidecar.example.yaml against a schema (the real one, or one built from an
 * upstream declaration with a key more): every key mentioned at its place, set or as a
 * "# key: value" line, with a comment above it naming its default and its env variable.
 */
export interface SchemaKey {
  path: ConfigPath;
  node: SchemaNode;
}

export function schemaKeys(schema: SchemaNode = ConfigSchema as unknown as SchemaNode): SchemaKey[] {
  const keys: SchemaKey[] = [];
  walkProperties((path, node) => keys.push({ path, node }), schema);
  return keys;
}

/**
 * The example with its commented-out settings switched on: a "# key: ..." line becomes "key: ...",
 * in place, when key is a schema key name. Prose comments stay comments.
 */
function uncommented(source: string, keys: readonly SchemaKey[]): string {
  const names = new Set(keys.map(({ path }) => String(path[path.length - 1])));
  return source
    .split('\n')
    .map((line) => {
      const m = /^(\s*)# ?(\s*)(- )?([A-Za-z][A-Za-z0-9]*)(:(?:\s.*)?)$/.exec(line);
      return m && names.has(m[4]!) ? `${m[1]}${m[2]}${m[3] ?? ''}${m[4]}${m[5]}` : line;
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

export function isSection(node: SchemaNode): boolean {
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

/** The keys of `schema` the example does not mention, each with the lines to add. */
export function missingFromExample(text: string, schema: SchemaNode = ConfigSchema as unknown as SchemaNode): string[] {
  const keys = schemaKeys(schema);
  const all = parseDocument(uncommented(text, keys), { uniqueKeys: true });
  if (all.errors.length > 0) return all.errors.map((e) => `the example with its optional lines uncommented is not valid YAML: ${e.message}`);
  return keys.filter(({ path }) => nodeAt(all.contents, path) === undefined).map(({ path, node }) => missingKey(path, node));
}

/** The keys the example mentions without the comment above naming what it does, its default and its env variable. */
export function undocumentedInExample(text: string, schema: SchemaNode = ConfigSchema as unknown as SchemaNode): string[] {
  const keys = schemaKeys(schema);
  const source = uncommented(text, keys);
  const all = parseDocument(source);
  const problems: string[] = [];
  for (const { path, node } of keys) {
    const found = nodeAt(all.contents, path);
    if (!found?.key.range) continue; // reported by missingFromExample
    const comment = commentAbove(source, found.key.range[0]);
    const line = source.slice(0, found.key.range[0]).split('\n').length;
    const key = `${formatPath(path)} (config/sidecar.example.yaml line ${line})`;
    if (comment === '') {
      problems.push(`${key}: add a comment line above it saying what it does${defaultHint(node)}`);
      continue;
    }
    if (isSection(node) || node.default === undefined) {
      const envName = node['x-env'];
      if (envName !== undefined && !comment.includes(`env ${envName}`)) problems.push(`${key}: add "env ${envName}" to the comment above it`);
      continue;
    }
    const def = node.default;
    if (typeof def === 'object') {
      if (!/Default/.test(comment)) problems.push(`${key}: add "Default ${JSON.stringify(def)}" (or the default in words) to the comment above it`);
    } else if (!comment.includes(`Default ${String(def)}`)) {
      problems.push(`${key}: add "Default ${String(def)}" to the comment above it`);
    }
    const envName = node['x-env'];
    if (envName !== undefined && !comment.includes(`env ${envName}`)) problems.push(`${key}: add "env ${envName}" to the comment above it`);
  }
  return problems;
}
