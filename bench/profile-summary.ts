/**
 * Summarises a V8 .cpuprofile (from `node --cpu-prof`): top functions by self time, and by
 * inclusive time for frames whose location matches a filter (default `/src/`). Frames in
 * dist/*.js are mapped back to src/*.ts through their source maps when present.
 *
 *   node --import tsx bench/profile-summary.ts <file.cpuprofile> [topN] [filter]
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[] }

const maps = new Map<string, SourceMap | undefined>();

function sourceMapFor(url: string): SourceMap | undefined {
  if (!url.startsWith('file://') || !url.includes('/dist/')) return undefined;
  if (!maps.has(url)) {
    const file = fileURLToPath(url) + '.map';
    maps.set(url, existsSync(file) ? new SourceMap(JSON.parse(readFileSync(file, 'utf8'))) : undefined);
  }
  return maps.get(url);
}

/** `name path:line` with dist frames mapped to their TypeScript source. */
function location(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  let url = frame.url;
  let line = frame.lineNumber + 1;
  const map = sourceMapFor(url);
  if (map) {
    const entry = map.findEntry(frame.lineNumber, frame.columnNumber) as { originalSource?: string; originalLine?: number };
    if (entry.originalSource && entry.originalLine !== undefined) {
      url = new URL(entry.originalSource, url).href;
      line = entry.originalLine + 1;
    }
  }
  const path = url.startsWith('file://') ? relative(ROOT, fileURLToPath(url)) : url;
  return `${name} ${path}:${line}`;
}

export function summarise(file: string, top = 25, filter = '/src/'): string {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const hits = new Map<number, number>();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const total = profile.samples.length;
  const keys = new Map<number, string>();
  const key = (n: ProfileNode): string => {
    if (!keys.has(n.id)) keys.set(n.id, location(n.callFrame));
    return keys.get(n.id)!;
  };
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  let idle = 0;
  for (const [id, count] of hits) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') idle += count;
    self.set(key(n), (self.get(key(n)) ?? 0) + count);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = key(byId.get(cur)!);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + count);
    }
  }
  const busy = total - idle;
  const pct = (c: number) => `${((100 * c) / busy).toFixed(1).padStart(5)} %`;
  const out = [`${total} samples, ${idle} idle; percentages of the ${busy} busy samples`, '', 'self time:'];
  for (const [k, c] of [...self].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`${pct(c)}  ${k}`);
  const isTarget = (k: string) => k.includes(filter) || (filter === '/src/' && / src\//.test(k));
  out.push('', `inclusive time, frames in ${filter}:`);
  for (const [k, c] of [...incl].filter(([k]) => isTarget(k)).sort((a, b) => b[1] - a[1]).slice(0, top)) out.push(`${pct(c)}  ${k}`);
  return out.join('\n') + '\n';
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [file, topArg, filter] = process.argv.slice(2);
  if (!file) {
    process.stderr.write('usage: profile-summary.mjs <file.cpuprofile> [topN] [filter]\n');
    process.exit(2);
  }
  process.stdout.write(summarise(file, Number(topArg ?? 25), filter ?? '/src/'));
}
