// Reads the Dockerfile and .dockerignore as `docker build` would (just enough of both grammars),
// so that a test and scripts/runtime-smoke.sh can check and reproduce what a stage gets from the
// build context without a Docker engine (there is none where CI runs).
//
//   node --import tsx scripts/docker-context.ts copy-stage <stage index> <dest dir>
//
// copies exactly the files that stage's COPY instructions take from the context (after
// .dockerignore) to where the instructions put them, relative to the stage's WORKDIR.
import { copyFileSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Instruction {
  /** Upper case. */
  name: string;
  /** Continuation lines joined, flags included. */
  args: string;
  line: number;
}

export interface Stage {
  image: string;
  alias?: string | undefined;
  body: Instruction[];
}

/** Comments, `\` continuations, one instruction a line. */
export function parseDockerfile(source: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  let start = 0;
  source.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (/^\s*#/.test(line) || (pending === '' && line.trim() === '')) return;
    if (pending === '') start = i + 1;
    if (/\\\s*$/.test(line)) {
      pending += `${line.replace(/\\\s*$/, '')} `;
      return;
    }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\w+)\s+([\s\S]*)$/.exec(full);
    if (!m) throw new Error(`Dockerfile line ${start}: cannot parse "${full}"`);
    out.push({ name: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
  });
  if (pending !== '') throw new Error('the Dockerfile ends inside a line continuation');
  return out;
}

export function stagesOf(instructions: Instruction[]): Stage[] {
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.name === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      if (!m) throw new Error(`Dockerfile line ${ins.line}: unexpected FROM "${ins.args}"`);
      stages.push({ image: m[1]!, alias: m[2], body: [] });
    } else {
      if (stages.length === 0 && ins.name !== 'ARG') throw new Error(`Dockerfile line ${ins.line}: ${ins.name} before the first FROM`);
      stages.at(-1)?.body.push(ins);
    }
  }
  return stages;
}

/** One COPY from the build context (not `--from=`): its sources and destination as written. */
export interface ContextCopy {
  sources: string[];
  dest: string;
  line: number;
}

export function contextCopies(stage: Stage): ContextCopy[] {
  return stage.body
    .filter((i) => (i.name === 'COPY' || i.name === 'ADD') && !/--from=/.test(i.args))
    .map((i) => {
      const parts = i.args.replace(/--\S+\s+/g, '').split(/\s+/);
      return { sources: parts.slice(0, -1).map(clean), dest: parts.at(-1)!, line: i.line };
    });
}

interface IgnoreRule {
  re: RegExp;
  negate: boolean;
}

/** .dockerignore: Go filepath.Match patterns, `**` for any depth, `!` re-includes; the last match wins. */
export function parseDockerignore(source: string): IgnoreRule[] {
  return source
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((line) => {
      const negate = line.startsWith('!');
      const pattern = clean(negate ? line.slice(1) : line);
      const re = pattern
        .replace(/[.+^${}()|[\]]/g, '\\$&')
        .replace(/\*\*\//g, '\u0000')
        .replace(/\*\*/g, '.*')
        .replace(/\*/g, '[^/]*')
        .replace(/\?/g, '[^/]')
        .replace(/\u0000/g, '(?:.*/)?');
      // A pattern that matches a directory excludes everything below it.
      return { re: new RegExp(`^${re}(?:/.*)?$`), negate };
    });
}

export function isIgnored(path: string, rules: IgnoreRule[]): boolean {
  let ignored = false;
  for (const rule of rules) if (rule.re.test(path)) ignored = !rule.negate;
  return ignored;
}

/**
 * The files a stage takes from the context: [context path, path relative to WORKDIR] pairs.
 * Throws when a source is missing or wholly excluded, as `docker build` would fail there too.
 */
export function stageFiles(root: string, stage: Stage, rules: IgnoreRule[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const copy of contextCopies(stage)) {
    const dest = clean(copy.dest);
    for (const source of copy.sources) {
      const full = join(root, source);
      let isDir: boolean;
      try {
        isDir = statSync(full).isDirectory();
      } catch {
        throw new Error(`Dockerfile line ${copy.line}: COPY ${source}: not in the build context`);
      }
      if (isIgnored(source, rules)) throw new Error(`Dockerfile line ${copy.line}: COPY ${source}: excluded by .dockerignore`);
      if (!isDir) {
        out.push([source, copy.dest.endsWith('/') || copy.sources.length > 1 ? posix.join(dest, basename(source)) : dest]);
        continue;
      }
      // A directory source copies its contents into the destination.
      for (const file of walk(full)) {
        const rel = posix.join(source, file);
        if (!isIgnored(rel, rules)) out.push([rel, posix.join(dest, file)]);
      }
    }
  }
  return out;
}

function walk(dir: string, prefix = ''): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    return entry.isDirectory() ? walk(join(dir, entry.name), rel) : [rel];
  });
}

/** `./src/` → `src`, `./` → `.`. */
function clean(path: string): string {
  return posix.normalize(path.replace(/^\.\//, '')).replace(/\/$/, '') || '.';
}

export function readStages(root: string): { stages: Stage[]; rules: IgnoreRule[] } {
  return {
    stages: stagesOf(parseDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'))),
    rules: parseDockerignore(readFileSync(join(root, '.dockerignore'), 'utf8')),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [command, index, dest] = process.argv.slice(2);
  if (command !== 'copy-stage' || index === undefined || dest === undefined) {
    process.stderr.write('usage: docker-context.ts copy-stage <stage index> <dest dir>\n');
    process.exitCode = 2;
  } else {
    const root = join(dirname(fileURLToPath(import.meta.url)), '..');
    const { stages, rules } = readStages(root);
    const stage = stages[Number(index)];
    if (!stage) throw new Error(`the Dockerfile has no stage ${index}`);
    for (const [from, to] of stageFiles(root, stage, rules)) {
      mkdirSync(dirname(join(dest, to)), { recursive: true });
      copyFileSync(join(root, from), join(dest, to));
    }
  }
}
