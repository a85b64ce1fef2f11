import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { envBindings } from '../../src/config/walk.js';
import { envNameOf } from '../../src/shared/env-names.js';
import { sidecarMessages } from './messages.js';

const ROOT = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, ROOT), 'utf8');

/** Every `export`ed name in src/ (and the test helpers the guide names), their methods, and every file name in src/. */
function sourceApi(): { names: Set<string>; files: Set<string> } {
  const names = new Set<string>();
  const files = new Set<string>();
  const walk = (dir: URL, recordFiles = true) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(new URL(`${entry.name}/`, dir), recordFiles);
      else if (entry.name.endsWith('.ts')) {
        if (recordFiles) files.add(entry.name);
        const text = readFileSync(new URL(entry.name, dir), 'utf8');
        // Methods of exported classes and interfaces: `clock.advance(ms)`, `tee.captured()`.
        for (const m of text.matchAll(/^\s+(?:async |static |readonly |get |private )*#?(\w+)\??(?:\(|: \()/gm)) names.add(m[1]!);
        for (const m of text.matchAll(/^export (?:async )?(?:function\*? |const |let |class |interface |type |abstract class )(\w+)/gm)) names.add(m[1]!);
        for (const m of text.matchAll(/^export \{([^}]+)\}/gm)) for (const n of m[1]!.split(',')) names.add(n.trim().replace(/^type /, '').split(/\s+as\s+/).pop()!);
      }
    }
  };
  walk(new URL('src/', ROOT));
  walk(new URL('test/helpers/', ROOT), false);
  return { names, files };
}

/** Every file of src/ as one text, string escapes (`\'`) undone, so a quoted message is found as an operator reads it. */
function sourceText(): string {
  const parts: string[] = [];
  const walk = (dir: URL) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(new URL(`${entry.name}/`, dir));
      else if (entry.name.endsWith('.ts')) parts.push(readFileSync(new URL(entry.name, dir), 'utf8'));
    }
  };
  walk(new URL('src/', ROOT));
  return parts.join('\n').replace(/\\(['"`\\])/g, '$1');
}

/** The test helpers the guide names, as one text. */
function helperText(): string {
  const dir = new URL('test/helpers/', ROOT);
  return readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => readFileSync(new URL(f, dir), 'utf8')).join('\n');
}

/** Inline code spans of a Markdown text (they may wrap over a line break). */
function codeSpans(md: string): string[] {
  return [...md.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\s*\n\s*/g, ' '));
}

/** The code spans in the first column of every table row: the messages the guide explains. */
function messageColumn(md: string): string[] {
  return md.split('\n').filter((l) => l.startsWith('| ') && !/^\|[\s|:-]+\|$/.test(l))
    .flatMap((l) => codeSpans(l.split(' | ')[0]!))
    .filter((span) => /[a-z]{2,} [a-z]{2,}/i.test(span));
}

/** A runbook code span that quotes the sidecar (words, not a command, a setting or a metric). */
function isQuotedMessage(span: string): boolean {
  return /[a-z]{2,} [a-z]{2,}/i.test(span) && !/^(b2b-sidecar|kubectl|systemctl|curl|getent|npm|GET|POST) /.test(span) && !/^[\w.]+: /.test(span);
}

/**
 * The parts of a quoted message that must appear in src/ as written: what lies between the
 * guide's stand-ins for variable parts (`…`, a number `N`, and the example values it shows for the
 * egress proxy: `http://…`, `(service.proxy)`, `host:port`).
 */
function messageParts(span: string): string[] {
  return span.split(/http:\/\/…|\(service\.proxy\)|host:port|…|\bN\b/).map((s) => s.trim()).filter((s) => s.length >= 5);
}

/** Code spans that are HTTP header names, not types. */
const HEADER_NAMES = new Set(['Connection', 'Expect', 'Trailer', 'Host', 'Location', 'Authorization', 'ApiKey', 'Allow']);
/** Names the guide uses that belong to TypeScript or PromQL, not to the code: `Pick`, `rate()`. */
const NOT_OURS = new Set(['Pick', 'rate']);

describe('the engineer\'s guide (docs/architecture.md) kept true by the code', () => {
  it('names only functions, classes and types that src/ exports, identifiers that exist, and files that exist', () => {
    const guide = read('docs/architecture.md');
    const { names, files } = sourceApi();
    const code = [...guide.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
    // `name(` at the start of a code span is an API claim: createSidecar(config, ...), loadTrustedCas(caFile).
    const called = code.map((c) => /^(?:new )?([A-Za-z_$][\w$]*)\(/.exec(c)?.[1]).filter((n): n is string => n !== undefined);
    // Capitalised bare names are types or classes: `TrustedCas`, `Metrics`.
    const types = code.filter((c) => /^[A-Z][A-Za-z]+$/.test(c) && !HEADER_NAMES.has(c));
    // Exported, or defined in a file the guide sends the reader to (`env(...)` in schema.ts, `configOption()`).
    const source = `${sourceText()}\n${helperText()}`;
    const defined = new Set([...source.matchAll(/\b(?:function\*?|const|let|class|interface|type)\s+(\w+)/g)].map((m) => m[1]!));
    const missing = [...new Set([...called, ...types])].filter((n) => !names.has(n) && !defined.has(n) && !NOT_OURS.has(n));
    assert.deepEqual(missing, [], 'docs/architecture.md names these, which no file in src/ exports or defines');
    // Other bare identifiers (`tokenManagerOptions`, `onBodySent`, `CONTROL_ROUTES`, `B2B_LISTEN_PORT`)
    // are found as a word in src/ or test/helpers/.
    const identifiers = [...new Set(code.filter((c) => /^(?:[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][A-Z0-9]*_[A-Z0-9_]+)$/.test(c)))];
    assert.ok(identifiers.length > 15, `only ${identifiers.length} identifiers found: the extraction broke`);
    // An environment variable's name is derived (shared/env-names.ts): it is looked up among the schema's.
    const envNames = new Set(envBindings().map((b) => b.env));
    assert.deepEqual(identifiers.filter((n) => (/^B2B_/.test(n) ? !envNames.has(n) : !new RegExp(`\\b${n}\\b`).test(source))), [], 'docs/architecture.md names these, which appear nowhere in src/');
    // `<name>` stands for the file a recipe makes; dist/ is what the build makes.
    const named = [...new Set(code.filter((c) => !c.includes('<')).flatMap((c) => c.match(/[\w./-]+\.(?:ts|mjs|cjs|ya?ml|json|md)\b/g) ?? []))]
      .filter((f) => !f.startsWith('dist/'));
    assert.ok(named.length > 40, `only ${named.length} file names found: the extraction broke`);
    // A path is looked up as written (from the root, or under src/); a bare name anywhere in src/ or test/helpers/.
    const exists = (f: string) => (f.includes('/')
      ? [f, `src/${f}`].some((p) => existsSync(new URL(p, ROOT)))
      : files.has(f) || existsSync(new URL(`test/helpers/${f}`, ROOT)) || existsSync(new URL(`test/docs/${f}`, ROOT)) || existsSync(new URL(f, ROOT)));
    assert.deepEqual(named.filter((f) => !exists(f) && !/\.d\.ts$/.test(f)), [], 'docs/architecture.md names files that do not exist');
  });

  it('states the naming rule of the environment variables with examples that are real', () => {
    // The rule itself is held to every name by test/config/upstream-keys.test.ts; here, the guide's account of it.
    const section = read('docs/architecture.md').split('**Environment variable names**')[1]?.split('\n\n')[0] ?? '';
    assert.match(section, /`envNameOf`/, 'the guide names the function that is the rule');
    const examples = [...section.replace(/\n/g, ' ').matchAll(/`([a-zA-Z.]+)` → `(B2B_[A-Z0-9_]+)`/g)].map((m) => [m[1]!, m[2]!] as const);
    assert.ok(examples.length >= 4, 'the guide gives examples of the rule');
    const actual = new Map(envBindings().map((b) => [b.path.join('.'), b.env]));
    for (const [key, env] of examples) {
      assert.equal(envNameOf(key.split('.')), env, `docs/architecture.md: ${key} by the rule`);
      assert.equal(actual.get(key), env, `docs/architecture.md: ${key} in the schema`);
    }
  });
});

describe('operator documentation kept true by the code', () => {
  it('troubleshooting.md explains every message the sidecar writes in an error body, /readyz or /healthz', () => {
    const guide = read('docs/troubleshooting.md');
    const messages = sidecarMessages(ROOT);
    assert.ok(messages.size >= 40, `only ${messages.size} messages found: the extraction in test/docs/messages.ts broke`);
    const missing = [...messages].filter(([text]) => !guide.includes(text)).map(([text, file]) => `${file}: ${text}`);
    assert.deepEqual(missing, [], 'add these to docs/troubleshooting.md (symptom → cause → action)');
  });

  it('troubleshooting.md and runbook.md quote only messages that exist in src/ (each part between … found as written)', () => {
    const source = sourceText();
    const quoted = [
      ...messageColumn(read('docs/troubleshooting.md')).map((span) => ['docs/troubleshooting.md', span] as const),
      ...codeSpans(read('docs/runbook.md')).filter(isQuotedMessage).map((span) => ['docs/runbook.md', span] as const),
    ];
    assert.ok(quoted.length > 60, `only ${quoted.length} quoted messages found: the extraction broke`);
    const missing = quoted.flatMap(([file, span]) => messageParts(span).filter((part) => !source.includes(part)).map((part) => `${file}: "${part}" (in \`${span}\`)`));
    assert.deepEqual(missing, [], 'these quoted texts are not in src/: fix the quote or the code');
  });

  it('troubleshooting.md and runbook.md name only configuration keys that exist', () => {
    // The README's configuration table is generated from the schema (test/config/readme-table.test.ts).
    const keys = new Set([...read('README.md').matchAll(/^\| `([a-zA-Z]+\.[a-zA-Z.]+)` \|/gm)].map((m) => m[1]!));
    assert.ok(keys.size > 40, `only ${keys.size} keys found in the README table`);
    const named = ['docs/troubleshooting.md', 'docs/runbook.md'].flatMap((file) => codeSpans(read(file))
      .flatMap((span) => span.match(/\b(?:service|credentials|token|proxy|guard|admin|listen|log|shutdown|localization|upstream)\.[a-zA-Z]+\b/g) ?? [])
      .map((key) => [file, key] as const));
    assert.ok(named.length > 20, 'the extraction found the keys');
    assert.deepEqual(named.filter(([, key]) => !keys.has(key)).map(([file, key]) => `${file}: ${key}`), []);
  });

  it('every alert links its own runbook section, and every runbook section is an alert', () => {
    const rules = (parse(read('deploy/prometheus/alerts.yaml')) as { groups: Array<{ rules: Array<{ alert?: string; annotations?: Record<string, string> }> }> })
      .groups.flatMap((g) => g.rules).filter((r) => r.alert);
    const headings = [...read('docs/runbook.md').matchAll(/^## (\S+)$/gm)].map((m) => m[1]!);
    for (const rule of rules) {
      assert.equal(rule.annotations?.runbook_url, `docs/runbook.md#${rule.alert!.toLowerCase()}`, rule.alert);
      assert.ok(headings.includes(rule.alert!), `docs/runbook.md has no section ${rule.alert}`);
    }
    assert.deepEqual(headings.sort(), rules.map((r) => r.alert!).sort());
  });

  it('the runbook\'s timing table gives every alert its `for:` and says how long it outlives its cause from its expression\'s window', () => {
    const rules = (parse(read('deploy/prometheus/alerts.yaml')) as { groups: Array<{ rules: Array<{ alert?: string; expr: string; for?: string }> }> })
      .groups.flatMap((g) => g.rules).filter((r) => r.alert);
    const section = read('docs/runbook.md').split('## When alerts fire and clear')[1]?.split('\n## ')[0] ?? '';
    const rows = new Map(section.split('\n').filter((l) => l.startsWith('| B2BSidecar'))
      .map((l) => l.split(' | ').map((c) => c.replace(/^\| | \|$/g, '')) as [string, string, string]).map(([a, f, c]) => [a, { fires: f, clears: c }]));
    assert.deepEqual([...rows.keys()].sort(), rules.map((r) => r.alert!).sort(), 'one row per alert');
    const minutes = (d: string) => Number(/^(\d+)m$/.exec(d)?.[1]);
    for (const rule of rules) {
      const row = rows.get(rule.alert!)!;
      if (rule.for) assert.ok(row.fires.includes(`\`for: ${rule.for}\``), `${rule.alert}: fires names for: ${rule.for}`);
      else assert.doesNotMatch(row.fires, /for:/, rule.alert);
      const windows = [...rule.expr.matchAll(/\[(\d+m)\]/g)].map((m) => m[1]!);
      if (windows.length === 0) {
        assert.match(row.clears, /^at once/, `${rule.alert}: no window, so it clears at once`);
      } else {
        const widest = windows.sort((a, b) => minutes(b) - minutes(a))[0]!;
        // Terms joined by `and`, each with a window: false, and so cleared, as soon as the term whose
        // window ends first is (UnauthorizedSpike's [1m] beside its [5m]).
        const terms = rule.expr.split(/\band\b/).map((t) => [...t.matchAll(/\[(\d+m)\]/g)].map((m) => minutes(m[1]!)));
        const first = terms.length > 1 && terms.every((t) => t.length > 0) ? Math.min(...terms.map((t) => Math.max(...t))) : minutes(widest);
        if (first < minutes(widest)) {
          assert.ok(row.clears.startsWith(`within ${first === 1 ? 'a minute' : `${first} min`}`) && row.clears.includes(`[${first}m]`), `${rule.alert}: clears within its [${first}m] term`);
        } else {
          assert.ok(row.clears.startsWith(`up to ${minutes(widest)} min`) && row.clears.includes(`[${widest}]`), `${rule.alert}: clears up to its [${widest}] window`);
        }
      }
    }
  });

  it('the link checker of npm test (remark-validate-links) fails on a broken relative link or anchor', () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-links-'));
    writeFileSync(join(dir, 'a.md'), '# A\n\n[ok](b.md#b) [missing file](nope.md) [missing anchor](b.md#nowhere)\n');
    writeFileSync(join(dir, 'b.md'), '# B\n');
    const remark = fileURLToPath(new URL('node_modules/.bin/remark', ROOT));
    // The project's own settings (--rc-path), so plugins resolve from its node_modules.
    const run = spawnSync(remark, ['--rc-path', fileURLToPath(new URL('.remarkrc.json', ROOT)), '--frail', '--quiet', '--no-stdout', '--no-color', '.'], { cwd: dir, encoding: 'utf8' });
    assert.notEqual(run.status, 0);
    assert.match(run.stderr, /nope\.md/);
    assert.match(run.stderr, /nowhere/);
    assert.doesNotMatch(run.stderr, /b\.md#b\b/);
  });
});
