/**
 * `npm run bench`: b2b-sidecar side by side with direct access, nginx, a bare http-proxy and a bare undici proxy, on
 * loopback, bounded in time (default run well under 5 minutes). See bench/README.md.
 *
 *   node --import tsx bench/bench.ts [--smoke] [--rounds N] [--seconds S] [--latency-seconds S]
 *     [--post-seconds S] [--warmup-seconds S] [--idle-seconds S] [--stream-mib N]
 *     [--rotation-seconds S] [--budget-seconds S]
 *     [--only direct,nginx,bare,bare-undici,bare-undici-tuned,sidecar-undici,sidecar-http-proxy,replay-on,replay-off]
 *     [--out FILE] [--strict] [--dist DIR (an alternative build of the sidecar, for experiments)]
 *     [--node-options "..." (the sidecar's NODE_OPTIONS instead of the Dockerfile's, for experiments)]
 *     [--node-args "..." (options on node's command line instead of the Dockerfile ENTRYPOINT's, for experiments)]
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { LOAD_TOOL, runLoad, type LoadResult } from './lib/load.js';
import { cpuMicros, machineTicks, MB, privateMemory, privatePeakSampler, statusBytes, sumStatus, type PrivateMemory } from './lib/proc.js';
import { REPLAY_CONFIGS, runReplayRound, type ReplayConfig, type ReplaySample } from './lib/replay-post.js';
import {
  API_KEY, deployedNodeArgs, deployedNodeOptions, NGINX_BIN, nodeStartFloorMs, prepareTls, ROOT, setDistDir, setNodeArgs, setNodeOptions, sidecarCli, startBare, TLS_CLIENT_FLOOR_SCRIPT, startNginx, startNodeAlone, startSidecar, startTunedFloor, startUpstream,
  touch, type Engine, type ProxyProc, type SidecarProc, type Upstream,
} from './lib/setup.js';
import { HAS_TASKSET, pinSelf, stopAll } from './lib/spawn.js';
import { fmt, max, median, min, ratio } from './lib/stats.js';
import { streamThrough, type StreamResult } from './lib/stream.js';
import { issue14Verdicts, renderReplayTable, renderVerdicts, replayRows, replayVerdicts } from './lib/targets.js';

const CONFIGS = ['direct', 'nginx', 'bare', 'bare-undici', 'bare-undici-tuned', 'sidecar-undici', 'sidecar-http-proxy'] as const;
type ConfigName = (typeof CONFIGS)[number];
const LABEL: Record<ConfigName, string> = {
  direct: 'direct (no proxy)',
  nginx: 'nginx, 1 worker',
  bare: 'bare http-proxy (engine alone)',
  'bare-undici': 'bare undici dispatch (Node floor)',
  'bare-undici-tuned': 'bare undici dispatch, the sidecar\'s trust store and V8 settings (tuned floor)',
  'sidecar-undici': 'b2b-sidecar, engine undici',
  'sidecar-http-proxy': 'b2b-sidecar, engine http-proxy',
};
const ENGINES: Engine[] = ['undici', 'http-proxy'];
const maxPrivate = (a: PrivateMemory | undefined, b: PrivateMemory | undefined): PrivateMemory | undefined =>
  a && b ? { rssAnon: Math.max(a.rssAnon, b.rssAnon), uss: Math.max(a.uss, b.uss) } : a ?? b;
const engineConfig = (e: Engine): ConfigName => (e === 'undici' ? 'sidecar-undici' : 'sidecar-http-proxy');

interface Options {
  smoke: boolean;
  rounds: number;
  seconds: number;
  latencySeconds: number;
  postSeconds: number;
  warmupSeconds: number;
  idleSeconds: number;
  streamMiB: number;
  rotationSeconds: number;
  only: ConfigName[];
  /** The POST replay on/off pair (issue 14), unless `--only` leaves it out. */
  replay: ReplayConfig[];
  budgetSeconds: number;
  out: string;
  strict: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    smoke: false, rounds: 3, seconds: 3, latencySeconds: 2, postSeconds: 2, warmupSeconds: 3,
    idleSeconds: 60, streamMiB: 1024, rotationSeconds: 6, only: [...CONFIGS], replay: [...REPLAY_CONFIGS], budgetSeconds: 380,
    out: join(ROOT, 'bench', 'results', 'latest.md'), strict: false,
  };
  const num = (name: string, v: string | undefined, lo: number, hi: number) => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < lo || n > hi) throw new Error(`${name} must be a number from ${lo} to ${hi}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--smoke':
        Object.assign(o, { smoke: true, rounds: 1, seconds: 2, latencySeconds: 2, postSeconds: 1, warmupSeconds: 2, idleSeconds: 10, streamMiB: 256, rotationSeconds: 4 });
        break;
      case '--rounds': o.rounds = num(a, next(), 1, 10); break;
      case '--seconds': o.seconds = num(a, next(), 1, 30); break;
      case '--latency-seconds': o.latencySeconds = num(a, next(), 1, 30); break;
      case '--post-seconds': o.postSeconds = num(a, next(), 1, 30); break;
      case '--warmup-seconds': o.warmupSeconds = num(a, next(), 1, 10); break;
      case '--budget-seconds': o.budgetSeconds = num(a, next(), 30, 3600); break;
      case '--idle-seconds': o.idleSeconds = num(a, next(), 0, 600); break;
      case '--stream-mib': o.streamMiB = num(a, next(), 0, 4096); break;
      case '--rotation-seconds': o.rotationSeconds = num(a, next(), 0, 120); break;
      case '--out': o.out = next() ?? o.out; break;
      case '--strict': o.strict = true; break;
      case '--dist': setDistDir(next() ?? 'dist'); break;
      case '--node-options': setNodeOptions(next() ?? ''); break;
      case '--node-args': setNodeArgs(next() ?? ''); break;
      case '--only': {
        const names = (next() ?? '').split(',').filter(Boolean);
        const known: readonly string[] = [...CONFIGS, ...REPLAY_CONFIGS];
        for (const n of names) if (!known.includes(n)) throw new Error(`unknown configuration ${n}; one of ${known.join(', ')}`);
        o.only = CONFIGS.filter((c) => names.includes(c));
        o.replay = REPLAY_CONFIGS.filter((c) => names.includes(c));
        break;
      }
      case '-h': case '--help':
        process.stdout.write(readFileSync(new URL(import.meta.url)).toString().split('*/')[0] + '*/\n');
        process.exit(0);
        break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  return o;
}

interface Sample {
  round: number;
  get50: LoadResult;
  get1: LoadResult;
  post50: LoadResult;
  cpuGetUs?: number;
  cpuPostUs?: number;
  peakRss?: number;
  /** Highest RssAnon and USS sampled over the 50-connection windows. */
  peakPrivate?: PrivateMemory;
  readyMs?: number;
  tokenRttMs?: number;
}

/** Idle memory of a sidecar per engine, and of the bare undici proxy as the floor. */
interface IdleResult { name: Engine | 'bare-undici' | 'bare-undici-tuned' | 'node-alone'; seconds: number; rss?: number; priv?: PrivateMemory; error?: string }
interface RotationResult { engine: Engine; load?: LoadResult; gentoken?: number; unauthorized?: number; expired?: number; error?: string }
interface StreamRun { engine: Engine; down?: StreamResult; up?: StreamResult; error?: string }

const log = (msg: string) => process.stderr.write(`[bench ${((performance.now() - T0) / 1000).toFixed(1).padStart(5)} s] ${msg}\n`);
const T0 = performance.now();

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-bench-'));
  chmodSync(work, 0o755); // nginx workers (nobody) need to traverse it
  const notes: string[] = [];
  const haveDist = existsSync(sidecarCli());
  let configs = opts.only;
  if (!NGINX_BIN && configs.includes('nginx')) {
    const msg = 'nginx is not installed: skipping the nginx configuration (Debian: apt-get install nginx)';
    log(msg);
    notes.push(msg);
    configs = configs.filter((c) => c !== 'nginx');
  }
  if (!haveDist) {
    const msg = 'dist/cli.js is missing (run `npm run build`): skipping the b2b-sidecar configurations and the tuned floor';
    log(msg);
    notes.push(msg);
    configs = configs.filter((c) => !c.startsWith('sidecar') && c !== 'bare-undici-tuned');
  }
  const replayConfigs = haveDist ? opts.replay : [];
  if (LOAD_TOOL !== 'wrk') notes.push('wrk is not installed: load from autocannon (Node, heavier; absolute figures not comparable with wrk runs)');
  if (!HAS_TASKSET) notes.push('taskset is not available: processes are not pinned');
  log(`load generator ${LOAD_TOOL}; pinning ${HAS_TASKSET ? 'proxy on CPU 1, load + upstream on CPU 0' : 'off'}; configurations: ${configs.join(', ')}`);

  const samples = new Map<ConfigName, Sample[]>(configs.map((c) => [c, []]));
  const failed = new Map<ConfigName, string>();
  const idle: IdleResult[] = [];
  const streams: StreamRun[] = [];
  const rotations: RotationResult[] = [];
  const replaySamples = new Map<ReplayConfig, ReplaySample[]>(replayConfigs.map((c) => [c, []]));
  const replayFailed = new Map<ReplayConfig, string>();
  /** `node -e 0` wall times on the proxy CPU, one before each sidecar start. */
  const startFloor: number[] = [];
  /** The same for a process that builds Node's TLS trust store and exits. */
  const tlsStartFloor: number[] = [];
  const sampleStartFloor = async () => {
    try {
      startFloor.push(await nodeStartFloorMs());
      tlsStartFloor.push(await nodeStartFloorMs(TLS_CLIENT_FLOOR_SCRIPT));
    } catch (err) {
      notes.push(`node -e failed: ${(err as Error).message}`);
    }
  };
  const idleTimers: Array<Promise<void>> = [];
  const idleHandles: NodeJS.Timeout[] = [];
  const load0 = loadavg()[0]!;
  const ticks0 = machineTicks();

  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up: Upstream = await startUpstream(join(work, 'tls'), caPem, 900);
    // The baselines carry a static token: obtain one with a long lifetime, then restore the TTL.
    await up.control.setTtl(86_400);
    const token = await up.control.gentoken();
    await up.control.setTtl(900);
    const directHeaders = { Authorization: `Bearer ${token}`, ApiKey: API_KEY };
    log(`upstream (b2b simulator) on ${up.url}`);

    // Idle RSS: one sidecar per engine started now, a few requests, then left alone; sampled
    // after idleSeconds while the rest of the benchmark runs on the other processes.
    // The bare undici proxy idles alongside as the floor: the same job without the sidecar's features;
    // and Node alone (an HTTP server answering itself), the runtime's own share.
    if (opts.idleSeconds > 0) {
      const idlers: Array<IdleResult['name']> = [
        'node-alone',
        ...(configs.includes('bare-undici') ? ['bare-undici' as const] : []),
        ...(configs.includes('bare-undici-tuned') ? ['bare-undici-tuned' as const] : []),
        ...(haveDist ? ENGINES.filter((e) => configs.includes(engineConfig(e))) : []),
      ];
      for (const name of idlers) {
        try {
          const proc = name === 'node-alone' ? await startNodeAlone()
            : name === 'bare-undici' ? await startBare(up, caFile, token, 'bare-undici.mjs')
            : name === 'bare-undici-tuned' ? await startTunedFloor(up, caFile, token)
            : await startSidecar(join(work, 'idle'), up, caFile, name, `idle-${name}`);
          await touch(proc.port, '/pub/b2b/v1/json1k', 10);
          const result: IdleResult = { name, seconds: opts.idleSeconds };
          idle.push(result);
          idleTimers.push(new Promise<void>((resolve) => idleHandles.push(setTimeout(() => {
            result.rss = statusBytes(proc.pids[0]!, 'VmRSS');
            result.priv = privateMemory(proc.pids[0]!);
            void proc.stop().finally(resolve);
          }, opts.idleSeconds * 1000))));
        } catch (err) {
          idle.push({ name, seconds: opts.idleSeconds, error: (err as Error).message.split('\n')[0] });
        }
      }
    }

    const startConfig = async (cfg: ConfigName): Promise<ProxyProc | undefined> => {
      switch (cfg) {
        case 'direct': return undefined;
        case 'nginx': return startNginx(work, up, caFile, token);
        case 'bare': return startBare(up, caFile, token);
        case 'bare-undici': return startBare(up, caFile, token, 'bare-undici.mjs');
        case 'bare-undici-tuned': return startTunedFloor(up, caFile, token);
        case 'sidecar-undici': await sampleStartFloor(); return startSidecar(join(work, 'sc'), up, caFile, 'undici');
        case 'sidecar-http-proxy': await sampleStartFloor(); return startSidecar(join(work, 'sc'), up, caFile, 'http-proxy');
      }
    };

    // What must still fit in the budget after the rounds: streaming and rotation per engine.
    const engineCount = ENGINES.filter((e) => configs.includes(engineConfig(e))).length;
    const extras = engineCount * ((opts.streamMiB > 0 ? 6 + (2 * opts.streamMiB) / 100 : 0) + (opts.rotationSeconds > 0 ? opts.rotationSeconds + 4 : 0));
    let roundStart = performance.now();
    for (let round = 1; round <= opts.rounds; round++) {
      const elapsed = (performance.now() - T0) / 1000;
      const lastRound = (performance.now() - roundStart) / 1000;
      roundStart = performance.now();
      if (round > 1 && elapsed + lastRound + extras > opts.budgetSeconds) {
        const msg = `time budget (${opts.budgetSeconds} s): stopped after ${round - 1} of ${opts.rounds} rounds`;
        log(msg);
        notes.push(msg);
        break;
      }
      // Rotate the order each round so no configuration always runs first or last.
      // The POST replay pair takes one place in the rotation.
      const all: Array<ConfigName | 'replay'> = [...configs, ...(replayConfigs.length === REPLAY_CONFIGS.length ? ['replay' as const] : [])];
      const order = all.map((_, i) => all[(i + round - 1) % all.length]!);
      for (const cfg of order) {
        if (cfg === 'replay') {
          if (replayFailed.size) continue;
          try {
            const pair = await runReplayRound(round, work, up, caFile, opts, work, sampleStartFloor);
            for (const [rc, rs] of pair) {
              replaySamples.get(rc)!.push(rs);
              log(`round ${round} ${rc}: ` + rs.measures.map((m) => `${m.kind} ${m.load.rps.toFixed(0)} req/s ${m.cpuUs.toFixed(1)} µs` +
                (m.load.badStatus + m.load.socketErrors ? ` ERRORS ${m.load.badStatus}/${m.load.socketErrors}` : '')).join(', '));
            }
          } catch (err) {
            const msg = (err as Error).message;
            log(`replay pair failed: ${msg}`);
            replayFailed.set('replay-on', msg.split('\n')[0]!);
          }
          continue;
        }
        if (failed.has(cfg)) continue;
        let proxy: ProxyProc | undefined;
        try {
          proxy = await startConfig(cfg);
          const base = proxy ? `http://127.0.0.1:${proxy.port}` : up.url;
          const headers = proxy ? {} : directHeaders;
          const get = { url: `${base}/pub/b2b/v1/json1k`, headers };
          const post = { url: `${base}/pub/b2b/v1/echo`, headers, method: 'POST' as const, bodyBytes: 4096 };
          const cpu = () => (proxy ? cpuMicros(proxy.pids) : 0);
          await runLoad({ ...get, connections: 50, seconds: opts.warmupSeconds }, work);
          const c0 = cpu();
          const priv = proxy ? privatePeakSampler(proxy.pids, 250) : undefined;
          const get50 = await runLoad({ ...get, connections: 50, seconds: opts.seconds }, work);
          const privGet = priv?.stop();
          const c1 = cpu();
          const get1 = await runLoad({ ...get, connections: 1, seconds: opts.latencySeconds }, work);
          const c2 = cpu();
          const priv2 = proxy ? privatePeakSampler(proxy.pids, 250) : undefined;
          const post50 = await runLoad({ ...post, connections: 50, seconds: opts.postSeconds }, work);
          const privPost = priv2?.stop();
          const c3 = cpu();
          const s: Sample = { round, get50, get1, post50 };
          if (proxy) {
            s.cpuGetUs = (c1 - c0) / Math.max(1, get50.requests);
            s.cpuPostUs = (c3 - c2) / Math.max(1, post50.requests);
            s.peakRss = sumStatus(proxy.pids, 'VmHWM');
            s.peakPrivate = maxPrivate(privGet, privPost);
          }
          if (proxy && 'readyMs' in proxy) {
            s.readyMs = (proxy as ProxyProc & { readyMs: number }).readyMs;
            if ('tokenRttMs' in proxy) s.tokenRttMs = (proxy as SidecarProc).tokenRttMs;
          }
          samples.get(cfg)!.push(s);
          log(`round ${round} ${cfg}: ${get50.rps.toFixed(0)} req/s, p50@1 ${get1.p50Ms.toFixed(3)} ms` +
            (s.cpuGetUs !== undefined ? `, ${s.cpuGetUs.toFixed(1)} µs CPU/req, peak RSS ${((s.peakRss ?? 0) / MB).toFixed(1)} MB, private ${((s.peakPrivate?.rssAnon ?? 0) / MB).toFixed(1)} MB` : '') +
            (get50.badStatus + get50.socketErrors + get1.badStatus + get1.socketErrors + post50.badStatus + post50.socketErrors
              ? `, ERRORS ${get50.badStatus + get1.badStatus + post50.badStatus} status / ${get50.socketErrors + get1.socketErrors + post50.socketErrors} socket` : ''));
        } catch (err) {
          const msg = (err as Error).message;
          log(`${cfg} failed: ${msg}`);
          failed.set(cfg, msg.split('\n')[0]!);
        } finally {
          await proxy?.stop();
        }
      }
    }

    // Streaming: RSS growth of a fresh sidecar while 1 GiB goes down and 1 GiB goes up.
    if (haveDist && opts.streamMiB > 0) {
      for (const engine of ENGINES) {
        if (!configs.includes(engineConfig(engine))) continue;
        const run: StreamRun = { engine };
        streams.push(run);
        let sc: SidecarProc | undefined;
        try {
          sc = await startSidecar(join(work, 'stream'), up, caFile, engine, `stream-${engine}`);
          await touch(sc.port, '/pub/b2b/v1/json1k', 20);
          const bytes = opts.streamMiB * MB;
          // Bounded: at least 10 s, at most 120 s, else what the budget leaves per transfer.
          const transferTimeout = () => 1000 * Math.max(10, Math.min(120, (opts.budgetSeconds - (performance.now() - T0) / 1000) / 3));
          run.down = await streamThrough(sc.port, sc.pids[0]!, 'down', bytes, transferTimeout());
          run.up = await streamThrough(sc.port, sc.pids[0]!, 'up', bytes, transferTimeout());
          log(`stream ${engine}: down ${(bytes / MB / run.down.seconds).toFixed(0)} MiB/s +${((run.down.rssPeak - run.down.rssBefore) / MB).toFixed(1)} MB, ` +
            `up ${(bytes / MB / run.up.seconds).toFixed(0)} MiB/s +${((run.up.rssPeak - run.up.rssBefore) / MB).toFixed(1)} MB`);
        } catch (err) {
          run.error = (err as Error).message.split('\n')[0];
          log(`stream ${engine} failed: ${run.error}`);
        } finally {
          await sc?.stop();
        }
      }
    }

    // Token rotation under load: 2 s tokens, 50 connections, zero failures expected.
    if (haveDist && opts.rotationSeconds > 0) {
      await up.control.setTtl(2);
      for (const engine of ENGINES) {
        if (!configs.includes(engineConfig(engine))) continue;
        const run: RotationResult = { engine };
        rotations.push(run);
        let sc: SidecarProc | undefined;
        try {
          sc = await startSidecar(join(work, 'rot'), up, caFile, engine, `rotation-${engine}`);
          const before = await up.control.stats();
          run.load = await runLoad({ url: `http://127.0.0.1:${sc.port}/pub/b2b/v1/json1k`, connections: 50, seconds: opts.rotationSeconds, captureFailures: true }, work);
          const after = await up.control.stats();
          run.gentoken = after['tokenRequests']! - before['tokenRequests']!;
          run.unauthorized = after['unauthorizedApiRequests']! - before['unauthorizedApiRequests']!;
          run.expired = after['expiredTokenPresented']! - before['expiredTokenPresented']!;
          log(`rotation ${engine}: ${run.load.requests} requests, ${run.load.badStatus + run.load.socketErrors} failed, ${run.gentoken} gentoken calls`);
        } catch (err) {
          run.error = (err as Error).message.split('\n')[0];
          log(`rotation ${engine} failed: ${run.error}`);
        } finally {
          await sc?.stop();
        }
      }
      await up.control.setTtl(900);
    }

    if (idleTimers.length) {
      log(`waiting for the ${opts.idleSeconds} s idle RSS sample`);
      await Promise.all(idleTimers);
    }
  } finally {
    for (const h of idleHandles) clearTimeout(h);
    await stopAll();
  }

  const elapsed = (performance.now() - T0) / 1000;
  const ticks1 = machineTicks();
  const stealPct = ticks0 && ticks1 && ticks1.total > ticks0.total ? (100 * (ticks1.steal - ticks0.steal)) / (ticks1.total - ticks0.total) : undefined;
  const report = renderReport({ opts, configs, samples, failed, idle, streams, rotations, notes, elapsed, load0, stealPct, replayConfigs, replaySamples, replayFailed, startFloor, tlsStartFloor });
  mkdirSync(join(ROOT, 'bench', 'results', 'raw'), { recursive: true });
  writeFileSync(opts.out, report.markdown);
  writeFileSync(join(ROOT, 'bench', 'results', 'raw', `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
    JSON.stringify({
      opts, samples: Object.fromEntries(samples), failed: Object.fromEntries(failed), idle, streams, rotations, notes,
      replay: Object.fromEntries(replaySamples), replayFailed: Object.fromEntries(replayFailed), startFloor, tlsStartFloor,
    }, null, 1));
  rmSync(work, { recursive: true, force: true });
  process.stdout.write(report.markdown);
  process.stdout.write(`\nwritten to ${relative(process.cwd(), opts.out)} in ${elapsed.toFixed(0)} s\n`);
  return opts.strict && report.failures > 0 ? 1 : 0;
}

interface ReportInput {
  opts: Options;
  configs: ConfigName[];
  samples: Map<ConfigName, Sample[]>;
  failed: Map<ConfigName, string>;
  idle: IdleResult[];
  streams: StreamRun[];
  rotations: RotationResult[];
  notes: string[];
  elapsed: number;
  load0: number;
  /** Share of CPU time the hypervisor stole during the run (/proc/stat), when readable. */
  stealPct: number | undefined;
  replayConfigs: ReplayConfig[];
  replaySamples: Map<ReplayConfig, ReplaySample[]>;
  replayFailed: Map<ReplayConfig, string>;
  /** `node -e 0` wall times, ms. */
  startFloor: number[];
  /** `node -e "tls.createSecureContext()"` wall times, ms. */
  tlsStartFloor: number[];
}

function renderReport(r: ReportInput): { markdown: string; failures: number } {
  const { opts, samples } = r;
  const col = (cfg: ConfigName, f: (s: Sample) => number | undefined) => (samples.get(cfg) ?? []).map(f).filter((x): x is number => x !== undefined);
  const med = (cfg: ConfigName, f: (s: Sample) => number | undefined) => median(col(cfg, f));
  const cpuGet = (c: ConfigName) => med(c, (s) => s.cpuGetUs);
  const rps = (c: ConfigName) => med(c, (s) => s.get50.rps);
  const p50at1 = (c: ConfigName) => med(c, (s) => s.get1.p50Ms);
  const peak = (c: ConfigName) => max(col(c, (s) => s.peakRss));
  const peakPriv = (c: ConfigName) => {
    const p = (samples.get(c) ?? []).map((s) => s.peakPrivate).filter((x): x is PrivateMemory => x !== undefined);
    return p.length ? { rssAnon: max(p.map((x) => x.rssAnon))!, uss: max(p.map((x) => x.uss))! } : undefined;
  };
  const errs = (c: ConfigName) => col(c, (s) => s.get50.badStatus + s.get50.socketErrors + s.get1.badStatus + s.get1.socketErrors + s.post50.badStatus + s.post50.socketErrors).reduce((a, b) => a + b, 0);

  const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
  const lines: string[] = [];
  lines.push(`# b2b-sidecar benchmark${opts.smoke ? ' — SMOKE RUN (short, not for conclusions)' : ''}`, '');
  lines.push(`${new Date().toISOString()} · ${cpus().length} × ${cpuModel} · Node ${process.version} · load: ${LOAD_TOOL} · ` +
    `pinning: ${HAS_TASKSET ? 'proxy alone on CPU 1; load generator, upstream and harness on CPU 0' : 'none (no taskset)'} · load average at start ${r.load0.toFixed(2)}, at the end ${loadavg()[0]!.toFixed(2)} (2 CPUs; other work on the machine shows here) · CPU steal during the run ${r.stealPct === undefined ? 'unknown' : `${r.stealPct.toFixed(1)} %`}`, '');
  if (r.stealPct !== undefined && r.stealPct >= 2) {
    lines.push(`> The host took ${r.stealPct.toFixed(1)} % of this machine's CPU time during the run: latencies (and to a lesser degree throughput) are inflated for every configuration, including nginx.`, '');
  }
  lines.push(`Upstream: the B2B simulator over HTTPS (keep-alive, token + ApiKey checked on every request) in its own process. ` +
    `${opts.rounds} round(s), configurations alternating, each in a fresh process: warm-up ${opts.warmupSeconds} s, GET 1 KiB JSON at 50 connections ${opts.seconds} s, ` +
    `at 1 connection ${opts.latencySeconds} s, POST 4 KiB echo at 50 connections ${opts.postSeconds} s. Medians over rounds; spread is min–max. ` +
    `Proxy CPU = utime+stime from /proc/<pid>/stat over the 50-connection GET window ÷ requests (nginx: master + worker). Peak RSS = VmHWM (nginx: sum).`, '');
  const nodeArgs = deployedNodeArgs().join(' ');
  lines.push(`The sidecar runs as the container image runs it: \`node ${nodeArgs ? `${nodeArgs} ` : ''}dist/cli.js run\` with the Dockerfile's NODE_OPTIONS (\`${deployedNodeOptions() || 'none'}\`); ` +
    `the bare references (http-proxy, undici) run with Node's defaults, the tuned floor with the sidecar's trust store, V8 tuning and NODE_OPTIONS (undici unbundled, no code cache). NODE_EXTRA_CA_CERTS is removed from every Node proxy's environment ` +
    `(${process.env.NODE_EXTRA_CA_CERTS ? `here it pointed at ${process.env.NODE_EXTRA_CA_CERTS}, which adds ~80 ms to any Node start on one core` : 'it was not set here'}); each gets its CA explicitly.`, '');
  for (const n of r.notes) lines.push(`> ${n}`, '');

  lines.push('| configuration | GET req/s @50 (spread) | × direct | p50 / p99 @50 ms | p50 / p99 @1 ms | +p50 @1 vs direct ms | CPU µs/req GET | × bare undici floor | × nginx | × bare http-proxy | POST 4 KiB req/s | CPU µs/req POST | peak RSS MB | peak private MB RssAnon / USS | failed requests |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const cfg of CONFIGS) {
    if (!r.configs.includes(cfg)) continue;
    if (!samples.get(cfg)?.length) {
      lines.push(`| ${LABEL[cfg]} | not measured: ${r.failed.get(cfg) ?? 'no samples'} |||||||||||||| |`);
      continue;
    }
    const rs = col(cfg, (s) => s.get50.rps);
    lines.push(`| ${LABEL[cfg]} | ${fmt(rps(cfg))} (${fmt(min(rs))}–${fmt(max(rs))}) | ${ratio(rps(cfg), rps('direct'))} | ` +
      `${fmt(med(cfg, (s) => s.get50.p50Ms), 2)} / ${fmt(med(cfg, (s) => s.get50.p99Ms), 2)} | ${fmt(p50at1(cfg), 3)} / ${fmt(med(cfg, (s) => s.get1.p99Ms), 3)} | ` +
      `${cfg === 'direct' ? '—' : fmt(diff(p50at1(cfg), p50at1('direct')), 3)} | ${fmt(cpuGet(cfg), 1)} | ${ratio(cpuGet(cfg), cpuGet('bare-undici'))} | ${ratio(cpuGet(cfg), cpuGet('nginx'))} | ${ratio(cpuGet(cfg), cpuGet('bare'))} | ` +
      `${fmt(med(cfg, (s) => s.post50.rps))} | ${fmt(med(cfg, (s) => s.cpuPostUs), 1)} | ${peak(cfg) === undefined ? '—' : fmt(peak(cfg)! / MB, 1)} | ` +
      `${peakPriv(cfg) ? `${fmt(peakPriv(cfg)!.rssAnon / MB, 1)} / ${fmt(peakPriv(cfg)!.uss / MB, 1)}` : '—'} | ${errs(cfg)}${r.failed.has(cfg) ? ` (then failed: ${r.failed.get(cfg)})` : ''} |`);
  }
  lines.push('');

  // Sidecar-only measurements.
  const floorMs = median(r.startFloor);
  lines.push('| b2b-sidecar | start → /readyz 200 ms (median, max) | token round trip ms | start → ready minus token ms | `node -e 0` ms (same run) | stream 1 direction: down MiB/s, RSS growth MB | up MiB/s, RSS growth MB | rotation (2 s tokens, 50 conn): requests / failed / gentoken calls / upstream 401s replayed |');
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  const readyNet = new Map<Engine, number | undefined>();
  for (const engine of ENGINES) {
    const cfg = engineConfig(engine);
    if (!r.configs.includes(cfg)) continue;
    const ready = col(cfg, (s) => s.readyMs);
    const rtt = col(cfg, (s) => s.tokenRttMs);
    const net = col(cfg, (s) => (s.readyMs !== undefined && s.tokenRttMs !== undefined ? s.readyMs - s.tokenRttMs : undefined));
    readyNet.set(engine, median(net));
    const st = r.streams.find((s) => s.engine === engine);
    const rot = r.rotations.find((x) => x.engine === engine);
    const streamCell = (s: StreamResult | undefined) => (s ? `${fmt(s.bytes / MB / s.seconds)} MiB/s, +${fmt((s.rssPeak - s.rssBefore) / MB, 1)} MB${s.ok ? '' : ` (FAILED: ${s.detail})`}` : st?.error ? `error: ${st.error}` : '—');
    lines.push(`| ${engine} | ${fmt(median(ready), 0)}, ${fmt(max(ready), 0)} | ${rtt.length ? fmt(median(rtt), 1) : 'not logged'} | ${fmt(median(net), 0)} | ` +
      `${fmt(floorMs, 0)} (${fmt(min(r.startFloor), 0)}–${fmt(max(r.startFloor), 0)}, ${r.startFloor.length} samples) | ${streamCell(st?.down)} | ${streamCell(st?.up)} | ` +
      `${rot?.load ? `${rot.load.requests} / ${rot.load.badStatus + rot.load.socketErrors} / ${rot.gentoken} / ${rot.unauthorized}` : rot?.error ? `error: ${rot.error}` : '—'} |`);
  }
  lines.push('', `Streaming: ${opts.streamMiB} MiB each way through a fresh sidecar (GET download, POST echo with Content-Length), RSS sampled every 25 ms plus VmHWM. ` +
    '`node -e 0`: spawn → exit on the proxy CPU in the proxies\' environment, sampled before each sidecar start.', '');

  // Idle memory, next to the floor (the bare undici proxy idling just as long).
  if (r.idle.length) {
    // "Over Node alone": what a process adds to the runtime's own idle memory, comparable across runtimes.
    const alone = r.idle.find((i) => i.name === 'node-alone' && !i.error);
    const over = (a?: number, b?: number) => (a !== undefined && b !== undefined ? `${a >= b ? '+' : ''}${fmt((a - b) / MB, 1)}` : '—');
    lines.push(`| idle after ${opts.idleSeconds} s (10 requests, then nothing) | RSS MB | private: RssAnon MB | private: USS MB | over Node alone: RSS / RssAnon MB |`, '|---|---:|---:|---:|---:|');
    for (const id of r.idle) {
      const label = id.name === 'node-alone' ? 'Node alone (node:http answering itself; the sidecar\'s node options)'
        : id.name === 'bare-undici' || id.name === 'bare-undici-tuned' ? LABEL[id.name] : LABEL[engineConfig(id.name)];
      lines.push(id.error ? `| ${label} | error: ${id.error} | | | |`
        : `| ${label} | ${id.rss === undefined ? '—' : fmt(id.rss / MB, 1)} | ${id.priv ? fmt(id.priv.rssAnon / MB, 1) : '—'} | ${id.priv ? fmt(id.priv.uss / MB, 1) : '—'} | ` +
          `${id === alone ? '' : `${over(id.rss, alone?.rss)} / ${over(id.priv?.rssAnon, alone?.priv?.rssAnon)}`} |`);
    }
    lines.push('', 'RssAnon (/proc/PID/status) is the process\'s anonymous memory: heaps, stacks, native buffers. USS (/proc/PID/smaps_rollup Private_Clean + Private_Dirty) ' +
      'adds file pages no other process maps, so it depends on how many other node processes run on the machine (here several); file pages of the node binary shared by every ' +
      'node process on a host are in neither. Peak private memory is sampled every 250 ms during the 50-connection windows.', '');
  }

  // POST with the replay copy on and off (issue 14).
  const replay = r.replayConfigs.length === 2 ? replayRows(r.replaySamples.get('replay-on') ?? [], r.replaySamples.get('replay-off') ?? []) : [];
  if (replay.length) {
    lines.push(`POST through the default engine with \`proxy.replayBodyLimitBytes\` at its default (replay on) and at 0 (off), two fresh sidecars per round; ` +
      `warm-up ${opts.warmupSeconds} s of 1 KiB POSTs each, then per body kind ${Math.max(1, Math.floor(opts.postSeconds))} pair(s) of 1 s windows at 50 connections, on and off back to back, alternating which goes first (both processes alive, one loaded at a time). The throughput cost is the median over all pairs of 1 − on/off. ` +
      'Proxy CPU busy near 100 % means the proxy set the pace; below, the load generator and upstream (hashing every body on the other CPU) did, and throughput hides the proxy\'s cost: read the CPU column then.', '');
    lines.push(...renderReplayTable(replay), '');
    for (const [cfg, msg] of r.replayFailed) lines.push(`> ${cfg} failed: ${msg}`, '');
  }

  // Verdicts: issue 14 (with the issue-7 figures that must not regress).
  const tunedIdle = r.idle.find((i) => i.name === 'bare-undici-tuned');
  const ratioOf = (a?: number, b?: number) => (a !== undefined && b ? a / b : undefined);
  const figures = (engine: Engine) => {
    const cfg = engineConfig(engine);
    const id = r.idle.find((i) => i.name === engine);
    const st = r.streams.find((s) => s.engine === engine);
    const rot = r.rotations.find((x) => x.engine === engine);
    return issue14Verdicts({
      cpuUs: cpuGet(cfg), floorCpuUs: cpuGet('bare-undici'), nginxCpuUs: cpuGet('nginx'),
      peakRss: peak(cfg), peakPrivate: peakPriv(cfg), idleRss: id?.rss, idlePrivate: id?.priv, idleSeconds: opts.idleSeconds,
      startNetMs: readyNet.get(engine), startFloorMs: floorMs, addedP50Ms: diff(p50at1(cfg), p50at1('direct')),
      streamMiB: opts.streamMiB,
      streamGrowth: st?.down && st.up ? Math.max(st.down.rssPeak - st.down.rssBefore, st.up.rssPeak - st.up.rssBefore) : undefined,
      streamOk: st?.down && st.up ? st.down.ok && st.up.ok : undefined,
      rotationFailed: rot?.load ? rot.load.badStatus + rot.load.socketErrors : undefined, rotationRequests: rot?.load?.requests,
      floor: {
        cpuRatioNginx: ratioOf(cpuGet('bare-undici'), cpuGet('nginx')), tunedCpuRatio: ratioOf(cpuGet('bare-undici-tuned'), cpuGet('bare-undici')),
        peakRss: peak('bare-undici-tuned'), idleRss: tunedIdle?.rss, idlePrivate: tunedIdle?.priv,
        startMs: med('bare-undici-tuned', (s) => s.readyMs), tlsStartMs: median(r.tlsStartFloor), addedP50Ms: diff(p50at1('bare-undici'), p50at1('direct')),
      },
    });
  };
  const engines = ENGINES.filter((e) => r.configs.includes(engineConfig(e))).map((e) => ({ name: e, verdicts: figures(e) }));
  const replayV = replayVerdicts(replay);
  lines.push(...renderVerdicts(engines, replayV), '');
  // --strict: the default engine's verdicts and the replay cost.
  const counted = [...(engines[0]?.name === 'undici' ? engines[0].verdicts : []), ...replayV];
  const failures = counted.filter((v) => v.ok === false).length;
  const missed = counted.filter((v) => v.ok === false).map((v) => `${v.target}: ${v.measured}, ${v.miss}`);
  lines.push(missed.length ? `Missed (default engine): ${missed.join('; ')}.` : 'Every measured issue-14 target is met on the default engine.', '');
  lines.push('', `Total time ${r.elapsed.toFixed(0)} s. Command: \`npm run bench${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\`.`, '');
  return { markdown: lines.join('\n'), failures };
}

function diff(a: number | undefined, b: number | undefined): number | undefined {
  return a === undefined || b === undefined ? undefined : a - b;
}

main().then(
  (code) => { process.exitCode = code; },
  async (err: unknown) => {
    process.stderr.write(`bench failed: ${(err as Error).stack ?? String(err)}\n`);
    await stopAll();
    process.exitCode = 1;
  },
);
