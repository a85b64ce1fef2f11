import { readFileSync } from 'node:fs';
import { isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { ConfigSchema } from '../../src/config/schema.js';
import { formatKey, walkProperties, type ConfigPath, type SchemaNode } from '../../src/config/walk.js';

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
 * in place, when key is a schema key name. A commented-out list entry is switched on the same
 * way: "# - key: ..." starts an item and "#   key: ..." continues it (a comment inside the entry
 * is "#   # ..."), so a list can show an entry of another shape, and a commented-out list key
 * ("# routes:") can show its first entry ("#   - key: ..."). Prose comments stay comments.
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

/**
 * The YAML node at a schema path; an array step (index 0 from walkProperties) looks in every
 * item, so a key that only one kind of entry has is found in the entry that has it.
 */
function nodeAt(root: unknown, path: ConfigPath, key?: Node): { key: Node; value: unknown } | undefined {
  if (path.length === 0) return key ? { key, value: root } : undefined;
  const [segment, ...rest] = path;
  if (typeof segment === 'number') {
    if (!isSeq(root)) return undefined;
    for (const item of root.items) {
      const found = nodeAt(item, rest, key);
      if (found) return found;
    }
    return undefined;
  }
  if (!isMap(root)) return undefined;
  const pair = root.items.find((p) => isScalar(p.key) && p.key.value === segment);
  return pair ? nodeAt(pair.value, rest, pair.key as Node) : undefined;
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
  // `credentials` is an object or a list (config/credential-sets-schema.ts): a section either way.
  return node.type === 'object' || (Array.isArray(node.type) && (node.type as string[]).includes('object'));
}

/**
 * Keys shown in a companion example instead of the main one: the list form of `credentials` (one
 * key cannot be a map and a list in one file). Every key under `under` is looked for there.
 */
export const COMPANION_EXAMPLES: ReadonlyArray<{ under: string; name: string; file: URL }> = [
  { under: 'credentials[]', name: 'config/credential-sets.example.yaml', file: new URL('../../config/credential-sets.example.yaml', import.meta.url) },
];

/** The keys each example text must show: the main text's, then each companion's. */
function examples(text: string, keys: readonly SchemaKey[]): Array<{ text: string; name: string; keys: SchemaKey[] }> {
  const companionOf = (key: SchemaKey) => COMPANION_EXAMPLES.find((c) => formatKey(key.path).startsWith(c.under));
  return [
    { text, name: 'config/sidecar.example.yaml', keys: keys.filter((k) => !companionOf(k)) },
    ...COMPANION_EXAMPLES.map((c) => ({ text: readFileSync(c.file, 'utf8'), name: c.name, keys: keys.filter((k) => companionOf(k) === c) })),
  ];
}

/** What a missing key's failure says to add: the lines to put under its section, in the example's own style. */
function missingKey(path: ConfigPath, node: SchemaNode): string {
  const name = String(path[path.length - 1]);
  const parent = path.slice(0, -1).filter((s) => typeof s === 'string').join('.');
  const inItem = typeof path[path.length - 2] === 'number';
  const where = parent === '' ? 'at the top level' : inItem ? `to an entry (or a commented-out "# - " entry) of \`${parent}:\`` : `under \`${parent}:\``;
  const comment = ['#', node.description ?? '<what it does>', ...hints(node)].join(' ');
  const value = isSection(node) ? `${name}:` : node.default === undefined ? `# ${name}: <value>` : `${name}: ${JSON.stringify(node.default)}`;
  return `${formatKey(path)}: add ${where} in config/sidecar.example.yaml:\n  ${comment}\n  ${value}`;
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
  return examples(text, keys).flatMap(({ text: source, name, keys: own }) => {
    const all = parseDocument(uncommented(source, keys), { uniqueKeys: true });
    if (all.errors.length > 0) return all.errors.map((e) => `${name} with its optional lines uncommented is not valid YAML: ${e.message}`);
    return own.filter(({ path }) => nodeAt(all.contents, path) === undefined).map(({ path, node }) => missingKey(path, node));
  });
}

/** The keys the example mentions without the comment above naming what it does, its default and its env variable. */
export function undocumentedInExample(text: string, schema: SchemaNode = ConfigSchema as unknown as SchemaNode): string[] {
  const keys = schemaKeys(schema);
  return examples(text, keys).flatMap(({ text: raw, name, keys: own }) => undocumentedIn(uncommented(raw, keys), name, own));
}

function undocumentedIn(source: string, name: string, keys: readonly SchemaKey[]): string[] {
  const all = parseDocument(source);
  const problems: string[] = [];
  for (const { path, node } of keys) {
    const found = nodeAt(all.contents, path);
    if (!found?.key.range) continue; // reported by missingFromExample
    const comment = commentAbove(source, found.key.range[0]);
    const line = source.slice(0, found.key.range[0]).split('\n').length;
    const key = `${formatKey(path)} (${name} line ${line})`;
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
