import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ConfigSchema } from './schema.js';
import { formatKey, schemaAt, walkProperties, type ConfigPath, type SchemaNode } from './walk.js';
import { codeCell, escapeCell, readmeRegion } from '../shared/readme-region.js';

const START = '<!-- config-table:start -->';
const END = '<!-- config-table:end -->';

/**
 * Renders the README configuration table (`| key | env var | default | without restart | meaning |`) from the
 * schema: one row per setting, dotted keys, array entries as `token.attach[].in`. Objects that
 * only group keys get no row. The README is checked against this output by a test.
 */
export function renderConfigTable(schema: unknown = ConfigSchema): string {
  const root = schema as SchemaNode;
  const lines = ['| key | env var | default | without restart | meaning |', '|---|---|---|---|---|'];
  walkProperties((path, node, required) => {
    if (node.properties) return;
    const env = node['x-env'] ? codeCell(node['x-env']) : '';
    // Only file contents are picked up live (x-reload); every other change needs a restart.
    const reload = node['x-reload'] ?? 'restart';
    lines.push(`| ${codeCell(keyOf(path))} | ${env} | ${defaultCell(root, path, node, required)} | ${reload} | ${meaning(node)} |`);
  }, root);
  return `${lines.join('\n')}\n`;
}

const region = readmeRegion(START, END);

/** The table currently between the README markers, or undefined when the markers are missing. */
export const readmeConfigTable = (readme: string): string | undefined => region.read(readme);

/** `readme` with the region between the markers replaced by `table`. */
export const replaceReadmeConfigTable = (readme: string, table: string): string => region.replace(readme, table);

const keyOf = formatKey;

function defaultCell(root: SchemaNode, path: ConfigPath, node: SchemaNode, required: boolean): string {
  if (node.default !== undefined) return codeCell(JSON.stringify(node.default));
  // A field of some kinds of a list entry (token.attach[].name: header, query and cookie entries).
  const kinds = node['x-required-for'];
  if (kinds !== undefined) return `**required** if ${codeCell(keyOf([...path.slice(0, -1), 'in']))} is ${kinds.map((k) => codeCell(k)).join(', ')}`;
  if (!required) return '—';
  // A required key inside an optional section is only required when that section is present.
  for (let i = path.length - 1; i > 0; i--) {
    const parent = path.slice(0, i);
    const owner = schemaAt(parent.slice(0, -1), root);
    const key = parent[parent.length - 1];
    const section = schemaAt(parent, root);
    if (typeof key === 'string' && section?.default === undefined && !owner?.required?.includes(key)) {
      return `**required** if ${codeCell(keyOf(parent))} is set`;
    }
  }
  return '**required**';
}

function meaning(node: SchemaNode): string {
  let text = node.description ?? '';
  if (node.anyOf?.every((b) => b.const !== undefined)) {
    text += ` One of ${node.anyOf.map((b) => codeCell(String(b.const))).join(', ')}.`;
  }
  if (node['x-secret']) text += ' Secret: redacted wherever the config is printed.';
  // `<token>` would otherwise be taken for an HTML tag and vanish from the rendered README.
  return escapeCell(text.trim()).replace(/</g, '&lt;').replace(/>/g, '&gt;');
}



// `npm run docs:config` (node --import tsx src/config/readme-table.ts --write) regenerates the README table.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const readmePath = fileURLToPath(new URL('../../README.md', import.meta.url));
  const table = renderConfigTable(ConfigSchema);
  if (process.argv.includes('--write')) {
    writeFileSync(readmePath, replaceReadmeConfigTable(readFileSync(readmePath, 'utf8'), table));
    process.stdout.write(`updated the configuration table in ${readmePath}\n`);
  } else {
    process.stdout.write(table);
  }
}
