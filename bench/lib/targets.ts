/**
 * The issue-14 targets ("performance, round two") as verdicts, and the POST replay table. Pure:
 * takes the medians the benchmark measured, returns markdown rows. A missed target says by how
 * much, so the report reads without arithmetic.
 */
import type { PrivateMemory } from './proc.js';
import { BODY_KINDS, type ReplaySample } from './replay-post.js';
import { fmt, median } from './stats.js';

const MB = 1024 * 1024;

/** What the targets need for one engine, all from the same run. */
export interface EngineFigures {
  cpuUs?: number;
  /** bare undici dispatch, the Node floor. */
  floorCpuUs?: number;
  nginxCpuUs?: number;
  peakRss?: number;
  peakPrivate?: PrivateMemory;
  idleRss?: number;
  idlePrivate?: PrivateMemory;
  idleSeconds: number;
  /** start → ready minus the token round trip, ms (median). */
  startNetMs?: number;
  /** `node -e 0` wall time, ms (median). */
  startFloorMs?: number;
  addedP50Ms?: number;
  streamMiB: number;
  streamGrowth?: number;
  streamOk?: boolean;
  rotationFailed?: number;
  rotationRequests?: number;
  /** The same figures for the Node floor, to show which limits any Node proxy can meet at all. */
  floor?: FloorFigures;
}

/**
 * The floor's own figures in the same run: bare undici dispatch at Node's defaults for CPU and
 * latency (the issue's reference), and with the sidecar's trust store and V8 settings (the tuned
 * floor) for memory and start-up, where the settings are part of what is measured.
 */
export interface FloorFigures {
  /** bare undici CPU per request ÷ nginx's. */
  cpuRatioNginx?: number;
  /** tuned floor CPU per request ÷ bare undici's. */
  tunedCpuRatio?: number;
  peakRss?: number;
  idleRss?: number;
  idlePrivate?: PrivateMemory;
  /** tuned floor: spawn → listening with its TLS context built, ms (median); it needs no token. */
  startMs?: number;
  /** `node -e` building Node's TLS trust store, spawn → exit, ms (median): any TLS client's start floor. */
  tlsStartMs?: number;
  addedP50Ms?: number;
}

export interface Verdict {
  target: string;
  limit: string;
  measured: string;
  /** undefined: not measured. */
  ok: boolean | undefined;
  /** How far over the limit, when missed ("+43 %"). */
  miss?: string;
  /** What the Node floor measures for the same target, when it applies. */
  floor?: string;
}

const over = (value: number, limit: number) => `+${(((value - limit) / limit) * 100).toFixed(0)} %`;

function le(target: string, value: number | undefined, limit: number | undefined, show: (n: number) => string, limitText?: string): Verdict {
  if (value === undefined || limit === undefined) return { target, limit: limitText ?? (limit === undefined ? '—' : show(limit)), measured: value === undefined ? '—' : show(value), ok: undefined };
  const ok = value <= limit;
  return { target, limit: limitText ?? show(limit), measured: show(value), ok, ...(ok ? {} : { miss: `${over(value, limit)} (${show(value - limit)} over)` }) };
}

const mb = (n: number) => `${(n / MB).toFixed(1)} MB`;
// Three decimals: a ratio of 1.151 against a limit of 1.15 must not read as "1.15× FAIL".
const times = (n: number) => `${n.toFixed(3)}×`;
const ms = (digits: number) => (n: number) => `${n.toFixed(digits)} ms`;

/** The issue-14 targets, plus the issue-7 figures that must not regress. */
export function issue14Verdicts(f: EngineFigures): Verdict[] {
  const ratio = (a?: number, b?: number) => (a !== undefined && b ? a / b : undefined);
  const rotation: Verdict = f.rotationFailed === undefined
    ? { target: 'zero failed requests, 2 s token rotation, 50 connections (issue 7)', limit: '0', measured: '—', ok: undefined }
    : {
        target: 'zero failed requests, 2 s token rotation, 50 connections (issue 7)', limit: '0',
        measured: `${f.rotationFailed} of ${f.rotationRequests}`, ok: f.rotationFailed === 0 && (f.rotationRequests ?? 0) > 0,
        ...(f.rotationFailed > 0 ? { miss: `${f.rotationFailed} failed` } : {}),
      };
  const stream = le(`RSS growth streaming ${f.streamMiB} MiB down / up ≤ 50 MB (issue 7)`, f.streamGrowth, 50 * MB, mb);
  if (stream.ok && f.streamOk === false) Object.assign(stream, { ok: false, miss: 'transfer failed' });
  const fl = f.floor;
  const floor = (v: Verdict, value: string | undefined): Verdict => (value === undefined ? v : { ...v, floor: value });
  const show = <T,>(x: T | undefined, render: (x: T) => string) => (x === undefined ? undefined : render(x));
  return [
    floor(le('CPU/request ≤ 1.15× bare undici floor', ratio(f.cpuUs, f.floorCpuUs), 1.15, times),
      show(fl?.tunedCpuRatio, (r) => `1.000× by definition; tuned floor ${times(r)}`)),
    floor(le('CPU/request ≤ 2.0× nginx', ratio(f.cpuUs, f.nginxCpuUs), 2.0, times), show(fl?.cpuRatioNginx, times)),
    floor(le('peak RSS @50 connections ≤ 70 MB', f.peakRss, 70 * MB, mb), show(fl?.peakRss, (n) => `${mb(n)} (tuned)`)),
    floor(le(`idle RSS after ${f.idleSeconds} s ≤ 50 MB`, f.idleRss, 50 * MB, mb), show(fl?.idleRss, (n) => `${mb(n)} (tuned)`)),
    floor({ ...le(`idle private memory (RssAnon) after ${f.idleSeconds} s ≤ 10 MB`, f.idlePrivate?.rssAnon, 10 * MB, mb),
      ...(f.idlePrivate ? { measured: `${mb(f.idlePrivate.rssAnon)} (USS ${mb(f.idlePrivate.uss)})` } : {}) },
    show(fl?.idlePrivate, (p) => `${mb(p.rssAnon)} (tuned)`)),
    floor(le('start → ready minus token round trip ≤ `node -e 0` + 50 ms', f.startNetMs, f.startFloorMs === undefined ? undefined : f.startFloorMs + 50, ms(0),
      f.startFloorMs === undefined ? undefined : `${(f.startFloorMs + 50).toFixed(0)} ms (${f.startFloorMs.toFixed(0)} + 50)`),
    startFloorCell(fl, f.startFloorMs)),
    floor(le('added p50 latency @1 connection ≤ 0.2 ms', f.addedP50Ms, 0.2, ms(3)), show(fl?.addedP50Ms, ms(3))),
    stream,
    rotation,
  ];
}

/** The start row's floor: Node's trust store alone, then the tuned floor proxy to listening. */
function startFloorCell(fl: FloorFigures | undefined, nodeMs: number | undefined): string | undefined {
  const parts = [
    fl?.tlsStartMs === undefined ? undefined
      : `\`node -e\` with Node's TLS trust store ${ms(0)(fl.tlsStartMs)}${nodeMs === undefined ? '' : ` (+${(fl.tlsStartMs - nodeMs).toFixed(0)})`}`,
    fl?.startMs === undefined ? undefined : `tuned floor (undici unbundled, no code cache) to listening, no token ${ms(0)(fl.startMs)}`,
  ].filter((x): x is string => x !== undefined);
  return parts.length ? parts.join('; ') : undefined;
}

const cell = (v: Verdict | undefined) => (v ? `${v.measured} | ${v.ok === undefined ? 'not measured' : v.ok ? 'PASS' : `**FAIL** ${v.miss ?? ''}`.trim()}` : '— | —');

/** One table, a column pair per engine; the first engine is the one the targets are for. */
export function renderVerdicts(engines: Array<{ name: string; verdicts: Verdict[] }>, extra: Verdict[] = []): string[] {
  const [first, ...rest] = engines;
  if (!first) return [];
  const head = `| target (issue 14) | limit | Node floor, same run | ${first.name} (default) | result |${rest.map((e) => ` ${e.name} (for comparison) | result |`).join('')}`;
  const sep = `|---|---:|---:|---:|:---:|${rest.map(() => '---:|:---:|').join('')}`;
  const lines = [head, sep];
  first.verdicts.forEach((v, i) => lines.push(`| ${v.target} | ${v.limit} | ${v.floor ?? '—'} | ${cell(v)} |${rest.map((e) => ` ${cell(e.verdicts[i])} |`).join('')}`));
  for (const v of extra) lines.push(`| ${v.target} | ${v.limit} | — | ${cell(v)} |${rest.map(() => ' | |').join('')}`);
  return lines;
}

export interface ReplayRow {
  kind: string;
  label: string;
  onRps?: number;
  offRps?: number;
  /** 1 − on/off throughput, median of the back-to-back pairs, and its smallest and largest pair. */
  costPct?: number;
  costMin?: number;
  costMax?: number;
  onCpuUs?: number;
  offCpuUs?: number;
  onBusyPct?: number;
  offBusyPct?: number;
  failed: number;
}

/** Medians per body kind over every window; the throughput cost pairs the on and off windows measured back to back. */
export function replayRows(on: readonly ReplaySample[], off: readonly ReplaySample[]): ReplayRow[] {
  return BODY_KINDS.map((k) => {
    const of = (xs: readonly ReplaySample[]) => xs.flatMap((s) => s.measures.filter((m) => m.kind === k.name).map((m) => ({ round: s.round, m })));
    const a = of(on);
    const b = of(off);
    const costs = a.flatMap(({ round, m }) => {
      const o = b.find((x) => x.round === round && x.m.pair === m.pair)?.m;
      return o && o.load.rps ? [(1 - m.load.rps / o.load.rps) * 100] : [];
    });
    return {
      kind: k.name, label: k.label,
      onRps: median(a.map((x) => x.m.load.rps)), offRps: median(b.map((x) => x.m.load.rps)), costPct: median(costs),
      costMin: costs.length ? Math.min(...costs) : undefined, costMax: costs.length ? Math.max(...costs) : undefined,
      onCpuUs: median(a.map((x) => x.m.cpuUs)), offCpuUs: median(b.map((x) => x.m.cpuUs)),
      onBusyPct: median(a.map((x) => x.m.busyPct)), offBusyPct: median(b.map((x) => x.m.busyPct)),
      failed: [...a, ...b].reduce((n, x) => n + x.m.load.badStatus + x.m.load.socketErrors, 0),
    };
  });
}

export function renderReplayTable(rows: readonly ReplayRow[]): string[] {
  const lines = [
    '| POST body, 50 connections | replay on req/s | replay off req/s | throughput cost of replay (median of pairs; range) | CPU µs/req on / off | CPU × off | proxy CPU busy on / off | failed requests |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    const spread = r.costMin === undefined ? '' : `; pairs ${r.costMin.toFixed(1)} … ${r.costMax!.toFixed(1)} %`;
    const cost = r.costPct === undefined ? '—' : `${r.costPct.toFixed(2)} %${r.costPct < 0 ? ' (on faster)' : ''}${spread}`;
    lines.push(`| ${r.label} | ${fmt(r.onRps)} | ${fmt(r.offRps)} | ${cost} | ` +
      `${fmt(r.onCpuUs, 1)} / ${fmt(r.offCpuUs, 1)} | ${r.onCpuUs !== undefined && r.offCpuUs ? `${(r.onCpuUs / r.offCpuUs).toFixed(2)}×` : '—'} | ` +
      `${fmt(r.onBusyPct)} / ${fmt(r.offBusyPct)} % | ${r.failed} |`);
  }
  return lines;
}

/** Replay must cost ≤ 5 % of POST throughput, for every body kind. */
export function replayVerdicts(rows: readonly ReplayRow[]): Verdict[] {
  return rows.map((r) => {
    const v = le(`replay costs ≤ 5 % of POST throughput: ${r.label}`, r.costPct, 5, (n) => `${n.toFixed(2)} %`);
    if (v.ok && r.failed > 0) return { ...v, ok: false, miss: `${r.failed} failed requests` };
    // A miss inside the pairs' own spread is not a measured cost: say so next to the verdict.
    const noise = r.costMin !== undefined && r.costMin < 0 ? `, inside the pairs' spread ${r.costMin.toFixed(1)} … ${r.costMax!.toFixed(1)} %` : '';
    return v.ok === false ? { ...v, miss: `${(r.costPct! - 5).toFixed(2)} points over${noise}` } : v;
  });
}
