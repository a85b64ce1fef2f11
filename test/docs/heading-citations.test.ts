import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * Code and configuration that rely on a rule cite the document that states it, often down to a
 * heading. A renamed heading leaves the citation pointing nowhere, and nothing else notices (the
 * link checker reads only Markdown). This finds every such citation outside the Markdown files
 * and checks that the heading exists in the file it names.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Where citations are looked for; test/fixtures/ is outside material and keeps its own words. */
const SCANNED = ['src', 'test', 'deploy', 'scripts', 'config', '.ci'];
const SKIPPED = ['test/fixtures', 'node_modules'];
/** This file: its planted citations below are meant not to resolve. */
const SELF = relative(ROOT, fileURLToPath(import.meta.url));

interface Citation {
  /** The Markdown file as cited: `docs/design.md`, `README`, `traps.md`. */
  doc: string;
  /** A heading's text, or a trap's number (`T15`) for the headings that start with one. */
  heading: string;
  line: number;
}

const DOC = String.raw`((?:[\w.-]+/)*[\w.-]+\.md|README)(?![\w.])`;
const QUOTED = String.raw`(?:"([^"\n]+)"|“([^”\n]+)”|'([^'\n]+)'|‘([^’\n]+)’)`;
/**
 * The styles the code uses, each a file followed by a heading:
 * - the heading quoted after a comma, a space or a parenthesis, or after `§`:
 *   `(docs/architecture.md, "An attachment kind")`, `docs/runbook.md ("Links to this runbook")`,
 *   `README "A unix socket"`, `README's 'Upgrading'`, `docs/design.md § "Reliability"`;
 * - `§` and an unquoted heading up to the end of the clause: `docs/design.md § Reliability`;
 * - a trap's number, or several: `docs/traps.md T15`, `docs/traps.md T38, T39`;
 * and one without a file, in a setting's description (it becomes a row of the README's table):
 * `see the Performance section`, which names a README heading.
 */
const STYLES: ReadonlyArray<{ re: RegExp; doc?: string; trap?: boolean }> = [
  { re: new RegExp(String.raw`${DOC}(?:'s)?(?:,\s*|\s*\(\s*|\s+)(?:§\s*)?${QUOTED}`, 'g') },
  { re: new RegExp(String.raw`${DOC}\s*§\s*([A-Za-z][^)\n;,"\x60]*?)(?=\s*[)\n;,\x60]|\.(?:\s|$)|$)`, 'g') },
  { re: new RegExp(String.raw`${DOC}\s+(T\d+(?:(?:,\s*|\s+and\s+)T\d+)*)\b`, 'g'), trap: true },
  { re: /\bthe (?:"([^"\n]+)"|([A-Z][\w-]*)) section\b/g, doc: 'README.md' },
];

/**
 * Every citation in a file's text. A comment that wraps is read as one line (the `*`, `//` or
 * `#` that starts the next line is dropped), so a heading cut in two is still found.
 */
function citations(text: string): Citation[] {
  const lines = text.split('\n');
  let joined = '';
  const starts: number[] = [];
  lines.forEach((line, i) => {
    const continued = i > 0 ? /^\s*(?:\*(?!\/)|\/\/|#)\s?/.exec(line) : null;
    if (i > 0) joined += continued ? ' ' : '\n';
    starts.push(joined.length);
    joined += continued ? line.slice(continued[0].length).trimStart() : line;
  });
  const lineAt = (offset: number) => {
    let n = 0;
    while (n + 1 < starts.length && starts[n + 1]! <= offset) n++;
    return n + 1;
  };
  const found: Citation[] = [];
  for (const { re, doc, trap } of STYLES) {
    for (const m of joined.matchAll(re)) {
      const cited = doc ?? m[1]!;
      const groups = m.slice(doc ? 1 : 2).filter((g): g is string => g !== undefined);
      const line = lineAt(m.index);
      if (trap) for (const number of groups[0]!.match(/T\d+/g)!) found.push({ doc: cited, heading: number, line });
      else found.push({ doc: cited, heading: groups[0]!.trim(), line });
    }
  }
  return found;
}

/**
 * What a citation can name in a Markdown text (fenced code skipped): its headings, and the bold
 * lead of a paragraph or list item, which docs/security.md uses as its sections
 * (`- **The admin listener cannot be held by idle connections**: ...`).
 */
function headings(md: string): string[] {
  const text = md.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  return [
    ...[...text.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)].map((m) => m[1]!),
    ...[...text.matchAll(/^[ \t]*(?:[-*][ \t]+)?\*\*([^*\n]+?)[.:]?\*\*/gm)].map((m) => m[1]!),
  ];
}

const normal = (heading: string) => heading.replace(/[`*_]/g, '').replace(/\s+/g, ' ').trim().toLowerCase();

/** True when `heading` (a title or a trap number) is one of `titles`. */
function resolves(heading: string, titles: readonly string[]): boolean {
  if (/^T\d+$/.test(heading)) return titles.some((t) => t.startsWith(`${heading}.`));
  return titles.some((t) => normal(t) === normal(heading));
}

/**
 * The Markdown files a citation may mean: a path from the repository's root; a bare name in the
 * citing file's folder, at the root or in docs/ (`README` is README.md).
 */
function candidates(doc: string, citingFile: string): string[] {
  const name = doc === 'README' ? 'README.md' : doc;
  const places = name.includes('/') ? [name] : [join(dirname(citingFile), name), name, join('docs', name)];
  return [...new Set(places)].filter((p) => existsSync(join(ROOT, p)));
}

function scannedFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    if (SKIPPED.includes(dir) || !existsSync(join(ROOT, dir))) return;
    for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (!entry.name.endsWith('.md') && path !== SELF) out.push(path);
    }
  };
  for (const dir of SCANNED) walk(dir);
  return out;
}

describe('headings cited outside the Markdown files', () => {
  it('every heading a comment, test or description cites exists in the file it names', () => {
    const all = scannedFiles().flatMap((file) => citations(readFileSync(join(ROOT, file), 'utf8')).map((c) => ({ ...c, file })));
    assert.ok(all.filter((c) => /^T\d+$/.test(c.heading)).length >= 40, 'the trap citations were found');
    assert.ok(all.filter((c) => !/^T\d+$/.test(c.heading)).length >= 3, 'the quoted heading citations were found');
    const broken = all.flatMap(({ file, line, doc, heading }) => {
      const docs = candidates(doc, file);
      if (docs.length === 0) return [`${file}:${line}: cites ${doc}, which does not exist`];
      const ok = docs.some((d) => resolves(heading, headings(readFileSync(join(ROOT, d), 'utf8'))));
      return ok ? [] : [`${file}:${line}: cites "${heading}" in ${docs.join(' or ')}, which has no such heading`];
    });
    assert.deepEqual(broken, [], 'fix the citation (or the heading it meant)');
  });

  it('finds each citation style, across a wrapped comment, and tells a renamed heading from a real one', () => {
    const text = [
      '/**',
      ' * compile error at each place (docs/architecture.md, "An',
      ' * attachment kind").',
      ' */',
      '# Option: a unix socket too (README "A unix socket").',
      '# relative to the repository: docs/runbook.md ("Links to this runbook") has the sed',
      '// README\'s \'Upgrading\' says how; docs/design.md § Reliability, and docs/design.md § "Measured choices".',
      'const millis = 1; // docs/traps.md T15; the way out (docs/traps.md T38, T39 and T40)',
      "description: 'see the Performance section.'",
      "read('docs/runbook.md').split('## When alerts fire and clear'); read('README.md'), 'utf8';",
      '// in code marks: `docs/design.md § Reliability`',
    ].join('\n');
    assert.deepEqual(citations(text).map(({ doc, heading, line }) => `${line} ${doc}: ${heading}`).sort(), [
      '9 README.md: Performance',
      '11 docs/design.md: Reliability',
      '2 docs/architecture.md: An attachment kind',
      '5 README: A unix socket',
      '6 docs/runbook.md: Links to this runbook',
      '7 README: Upgrading',
      '7 docs/design.md: Measured choices',
      '7 docs/design.md: Reliability',
      '8 docs/traps.md: T15',
      '8 docs/traps.md: T38',
      '8 docs/traps.md: T39',
      '8 docs/traps.md: T40',
    ].sort());
    const titles = headings('# Architecture\n\n```\n## Not a heading\n```\n\n### An attachment kind\n\n### T15. A timer over `2³¹−1` ms\n\n'
      + '- **The admin listener cannot be held**: by idle connections; **not a lead** here.\n**Lead of a paragraph.** Text.\n');
    assert.deepEqual(titles, ['Architecture', 'An attachment kind', 'T15. A timer over `2³¹−1` ms', 'The admin listener cannot be held', 'Lead of a paragraph']);
    assert.ok(!resolves('The admin listener', titles), 'a bold lead is cited whole');
    assert.ok(resolves('An attachment kind', titles));
    assert.ok(resolves('an  Attachment kind', titles), 'case and spacing do not matter');
    assert.ok(!resolves('Add an attachment kind', titles), 'the old name of a renamed heading does not resolve');
    assert.ok(resolves('T15', titles));
    assert.ok(!resolves('T1', titles), 'T1 is not T15');
  });
});
