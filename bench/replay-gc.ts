/**
 * Where the replay copy's cost goes: two sidecars from dist/ (replay at its default and off), POSTs
 * of one body size at 50 connections in alternating windows, proxy CPU per request and V8's
 * garbage collections per request from each sidecar's own `nodejs_gc_duration_seconds` (minor =
 * scavenges, major = mark-compacts, incremental = their marking steps). Finding 27.
 *
 *   npm run build && node --import tsx bench/replay-gc.ts [--body BYTES (65536)] [--pairs N (6)] [--seconds S (2)] [--dist DIR (another build)]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad } from './lib/load.js';
import { cpuMicros, MB, statusBytes } from './lib/proc.js';
import { prepareTls, ROOT, setDistDir, startSidecar, startUpstream, type SidecarProc } from './lib/setup.js';
import { pinSelf, stopAll } from './lib/spawn.js';

const args = process.argv.slice(2);
const arg = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? Number(args[i + 1]) : def;
};
const distAt = args.indexOf('--dist');
setDistDir(distAt >= 0 && args[distAt + 1] ? args[distAt + 1]! : join(ROOT, 'dist'));
const bodyBytes = arg('--body', 65536);
const pairs = arg('--pairs', 6);
const seconds = arg('--seconds', 2);
for (const [name, value] of [['--body', bodyBytes], ['--pairs', pairs], ['--seconds', seconds]] as const) {
  if (!Number.isInteger(value) || value < 1) {
    process.stderr.write(`${name} must be a whole number ≥ 1\n`);
    process.exit(2);
  }
}

interface Totals { cpuUs: number; requests: number; failed: number; minor: number; majorCount: number; majorS: number; incrementalS: number; minorS: number }
type Gc = Omit<Totals, 'cpuUs' | 'requests' | 'failed'>;

async function gcOf(p: SidecarProc): Promise<Gc> {
  const text = await (await fetch(`http://127.0.0.1:${p.adminPort}/metrics`)).text();
  const read = (what: 'count' | 'sum', kind: string) => Number(text.match(new RegExp(`nodejs_gc_duration_seconds_${what}\\{kind="${kind}"\\} (\\S+)`))?.[1] ?? 0);
  return { minor: read('count', 'minor'), minorS: read('sum', 'minor'), majorCount: read('count', 'major'), majorS: read('sum', 'major'), incrementalS: read('sum', 'incremental') };
}

async function main() {
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-replay-gc-'));
  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up = await startUpstream(join(work, 'tls'), caPem, 900);
    const procs: Record<'on' | 'off', SidecarProc> = {
      on: await startSidecar(join(work, 'on'), up, caFile, 'undici', 'replay-on', {}),
      off: await startSidecar(join(work, 'off'), up, caFile, 'undici', 'replay-off', { replayBodyLimitBytes: 0 }),
    };
    const load = (p: SidecarProc) => runLoad({ url: `http://127.0.0.1:${p.port}/pub/b2b/v1/echo`, method: 'POST', bodyBytes, connections: 50, seconds }, work);
    for (const p of Object.values(procs)) await load(p); // warm-up
    const zero = (): Totals => ({ cpuUs: 0, requests: 0, failed: 0, minor: 0, majorCount: 0, majorS: 0, incrementalS: 0, minorS: 0 });
    const totals = { on: zero(), off: zero() };
    /** CPU per request on ÷ off, pair by pair: their spread is the measurement's own noise. */
    const ratios: number[] = [];
    for (let i = 0; i < pairs; i++) {
      const pairCpu = { on: 0, off: 0 };
      for (const name of (i % 2 ? ['off', 'on'] : ['on', 'off']) as Array<'on' | 'off'>) {
        const p = procs[name];
        const g0 = await gcOf(p);
        const c0 = cpuMicros(p.pids);
        const r = await load(p);
        const c1 = cpuMicros(p.pids);
        const g1 = await gcOf(p);
        const t = totals[name];
        t.cpuUs += c1 - c0;
        t.requests += r.requests;
        t.failed += r.badStatus + r.socketErrors;
        for (const k of ['minor', 'minorS', 'majorCount', 'majorS', 'incrementalS'] as const) t[k] += g1[k] - g0[k];
        pairCpu[name] = (c1 - c0) / Math.max(1, r.requests);
      }
      if (pairCpu.off > 0) ratios.push(pairCpu.on / pairCpu.off);
    }
    const per = (t: Totals, v: number, scale: number) => ((v / t.requests) * scale).toFixed(1);
    const peak = (p: SidecarProc) => `${(statusBytes(p.pids[0]!, 'VmHWM')! / MB).toFixed(1)} MB`;
    process.stdout.write(`POST ${bodyBytes} B, 50 connections, ${pairs} pairs of ${seconds} s windows\n`);
    process.stdout.write('| replay | requests (failed) | peak RSS | CPU µs/req | scavenges / 1000 req | mark-compacts / 1000 req | GC µs/req: scavenge | mark-compact | incremental marking |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n');
    for (const [name, t] of Object.entries(totals)) {
      process.stdout.write(`| ${name} | ${t.requests} (${t.failed}) | ${peak(procs[name as 'on' | 'off'])} | ${per(t, t.cpuUs, 1)} | ${per(t, t.minor, 1000)} | ${((t.majorCount / t.requests) * 1000).toFixed(2)} | ` +
        `${per(t, t.minorS, 1e6)} | ${per(t, t.majorS, 1e6)} | ${per(t, t.incrementalS, 1e6)} |\n`);
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    const pct = (r: number) => `${((r - 1) * 100).toFixed(1)} %`;
    const overall = (totals.on.cpuUs / totals.on.requests) / (totals.off.cpuUs / totals.off.requests);
    process.stdout.write(`CPU per request, replay on ÷ off: ${pct(overall)} over all windows; pairs: median ${pct(sorted[Math.floor(sorted.length / 2)]!)}, ` +
      `range ${pct(sorted[0]!)} … ${pct(sorted[sorted.length - 1]!)}\n`);
    if (totals.on.failed + totals.off.failed > 0) process.exitCode = 1;
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(() => process.exit(process.exitCode ?? 0), async (err: unknown) => {
  process.stderr.write(`replay-gc failed: ${(err as Error).stack ?? String(err)}\n`);
  await stopAll();
  process.exit(1);
});
