/**
 * `npm run bench:soak`: traffic through the sidecar for `--seconds` (60 by default; the endurance
 * run is `-- --seconds 3600`) under everything a day brings: tokens living 2 s, revocations every
 * 5 s, a forward proxy carrying the service route (an in-process CONNECT proxy) that resets idle
 * tunnels every 30 s as an upstream or middlebox does, a credential rotation every quarter of the
 * run (the simulator accepts the new password, then the password file is replaced), wrk's steady
 * keep-alive connections plus clients that close and reopen theirs (keep-alive churn).
 *
 * Samples the sidecar's RSS, private memory (USS), V8 heap used, open file descriptors and
 * event-loop delay during the run and reports each one's slope per hour over the second half (least
 * squares, with its standard error). Exit 1 on any failed request, on a slope clearly above its
 * bound (slope − 2 standard errors > bound, see SLOPE_BOUNDS and bench/README.md), or when the
 * rotation did not take. Loopback only.
 *
 *   node --import tsx bench/soak.ts [--seconds N] [--connections N] [--churn-clients N] [--revoke-every S]
 *     [--reset-every S] [--rotate-every S] [--ttl S] [--sample-every S] [--gentoken-per-minute N] [--direct (no forward proxy)]
 *     [--engine undici|http-proxy]
 *     [--out FILE] [--dist DIR]
 */
import { mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { LOAD_TOOL, runLoad, type LoadResult } from './lib/load.js';
import { MB, privateMemory, smapsByKind, statusBytes, threadCount } from './lib/proc.js';
import { API_KEY, PASSWORD, prepareTls, ROOT, setDistDir, sleep, startSidecar, startUpstream, touch, type Engine, type SidecarProc } from './lib/setup.js';
import { HAS_TASKSET, pinSelf, stopAll } from './lib/spawn.js';
import { startSoakProxy } from './lib/connect-proxy.js';
import { startChurn } from './lib/churn.js';
import { trend, type Trend } from './lib/trend.js';

interface Options {
  seconds: number; connections: number; churnClients: number; revokeEvery: number; resetEvery: number;
  ttl: number; sampleEvery: number | undefined; gentokenPerMinute: number | undefined; rotateEvery: number | undefined; direct: boolean; engine: Engine; out: string;
}

/** What one sample holds; `unit` divides the raw value for the report. */
const MEASURES = {
  rss: { label: 'RSS', unit: MB, unitName: 'MB' },
  uss: { label: 'private memory (USS)', unit: MB, unitName: 'MB' },
  heapUsed: { label: 'V8 heap used', unit: MB, unitName: 'MB' },
  fds: { label: 'open file descriptors', unit: 1, unitName: 'fds' },
  loopP99: { label: 'event-loop delay p99', unit: 1e-3, unitName: 'ms' },
} as const;
type Measure = keyof typeof MEASURES;

/**
 * Growth per hour allowed over the second half of the run, in the report's units (bench/README.md).
 * USS is the leak signal: a day at 4 MB/h (~96 MB) still fits the Kubernetes example's 256 Mi limit.
 * RSS also counts file pages shared with other processes, which come and go with the host's memory
 * pressure, so its bound is looser. Heap growth is what a leak in the sidecar's own code looks like.
 * The event-loop delay under a saturating load follows the host's load; 50 ms/h catches work per
 * tick that grows (a list scanned per request) without reading a busier host as a leak.
 */
export const SLOPE_BOUNDS: Record<Measure, number> = { rss: 8, uss: 4, heapUsed: 2, fds: 5, loopP99: 50 };
/** The shortest run whose slopes are judged: before that, warm-up (JIT, pools, caches) is most of the growth. */
export const MIN_JUDGED_SECONDS = 600;

type Sample = { t: number } & Record<Measure, number>;

/**
 * A tunnel is reset once the proxy has seen no byte on it for this long. Shorter, the proxy (in the
 * busy harness process, its reads lagging) resets tunnels the sidecar has just written a request to:
 * a POST there gets a 502, as it must (it cannot be known unsent).
 */
const RESET_IDLE_MS = 1000;

function parseArgs(argv: string[]): Options {
  const o: Options = {
    seconds: 60, connections: 20, churnClients: 8, revokeEvery: 5, resetEvery: 30, ttl: 2, sampleEvery: undefined, gentokenPerMinute: undefined, rotateEvery: undefined, direct: false,
    engine: 'undici', out: join(ROOT, 'bench', 'results', 'soak-latest.md'),
  };
  const num = (name: string, v: string | undefined, lo: number, hi: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`${name} must be an integer from ${lo} to ${hi}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--seconds': o.seconds = num(a, next(), 10, 86_400); break;
      case '--connections': o.connections = num(a, next(), 1, 500); break;
      case '--churn-clients': o.churnClients = num(a, next(), 0, 200); break;
      case '--revoke-every': o.revokeEvery = num(a, next(), 1, 3600); break;
      case '--reset-every': o.resetEvery = num(a, next(), 0, 3600); break;
      case '--ttl': o.ttl = num(a, next(), 2, 3600); break;
      case '--sample-every': o.sampleEvery = num(a, next(), 1, 600); break;
      case '--direct': o.direct = true; break;
      case '--rotate-every': o.rotateEvery = num(a, next(), 5, 86_400); break;
      case '--gentoken-per-minute': o.gentokenPerMinute = num(a, next(), 1, 600); break;
      case '--engine': {
        const e = next();
        if (e !== 'undici' && e !== 'http-proxy') throw new Error('--engine must be undici or http-proxy');
        o.engine = e;
        break;
      }
      case '--out': o.out = next() ?? o.out; break;
      case '--dist': setDistDir(next() ?? 'dist'); break;
      default: throw new Error(`unknown argument ${a}`);
    }
  }
  return o;
}

/** The sidecar's own /metrics, for the V8 heap and the event-loop delay. */
function scrape(adminPort: number): Promise<Map<string, number>> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: adminPort, path: '/metrics', agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        const out = new Map<string, number>();
        for (const m of text.matchAll(/^([a-zA-Z0-9_:]+) ([0-9.e+-]+)$/gm)) out.set(m[1]!, Number(m[2]));
        resolve(out);
      });
    });
    req.once('timeout', () => req.destroy(new Error('metrics: timeout')));
    req.once('error', reject);
    req.end();
  });
}

async function sample(pid: number, adminPort: number, t: number): Promise<Sample | undefined> {
  const metrics = await scrape(adminPort).catch(() => undefined);
  const priv = privateMemory(pid);
  let fds = NaN;
  try {
    fds = readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    // gone
  }
  if (!metrics || !priv) return undefined;
  return {
    t, rss: statusBytes(pid, 'VmRSS') ?? NaN, uss: priv.uss, fds,
    heapUsed: metrics.get('nodejs_heap_size_used_bytes') ?? NaN,
    loopP99: metrics.get('nodejs_eventloop_lag_p99_seconds') ?? NaN,
  };
}

/** A warn or error line without what varies between its repetitions: level, message, reason, status, code. */
function warningKey(line: string): string {
  try {
    const j = JSON.parse(line) as { level?: string; message?: string; reason?: string; status?: number; code?: string };
    return `${j.level}: ${j.message}${j.reason ? ` (${j.reason})` : ''}${j.status ? ` → ${j.status}` : ''}${j.code ? ` [${j.code}]` : ''}`;
  } catch {
    return line; // not JSON: the raw line
  }
}

interface Breakdown { t: number; threads: number | undefined; kinds: Map<string, { rss: number; priv: number }> }

function breakdown(pid: number, t: number): Breakdown | undefined {
  try {
    return { t, threads: threadCount(pid), kinds: smapsByKind(pid) };
  } catch {
    return undefined; // the sidecar is gone: the report says so through its failures
  }
}

/** The report's table of private memory by kind of mapping, at the judged half's start and at the end. */
function breakdownRows(a: Breakdown | undefined, b: Breakdown | undefined): string[] {
  if (!a || !b) return [];
  const kinds = [...new Set([...a.kinds.keys(), ...b.kinds.keys()])];
  const mb = (n: number) => (n / MB).toFixed(1);
  const rows = kinds
    .map((k) => ({ k, from: a.kinds.get(k)?.priv ?? 0, to: b.kinds.get(k)?.priv ?? 0 }))
    .filter((r) => r.from >= 0.05 * MB || r.to >= 0.05 * MB)
    .sort((x, y) => (y.to - y.from) - (x.to - x.from))
    .map((r) => `| ${r.k} | ${mb(r.from)} | ${mb(r.to)} | ${r.to >= r.from ? '+' : ''}${mb(r.to - r.from)} |`);
  return [
    `Private memory by kind of mapping (/proc/PID/smaps; threads ${a.threads ?? '?'} → ${b.threads ?? '?'}), MB:`, '',
    `| mapping | at ${a.t.toFixed(0)} s | at ${b.t.toFixed(0)} s | change |`, '|---|---:|---:|---:|', ...rows, '',
  ];
}

/** Writes a file the way an operator's tooling rotates one: a new file renamed over the old. */
function replaceFile(file: string, text: string): void {
  writeFileSync(`${file}.new`, text, { mode: 0o600 });
  renameSync(`${file}.new`, file);
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const sampleEvery = opts.sampleEvery ?? Math.min(30, Math.max(2, Math.round(opts.seconds / 120)));
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-soak-'));
  let sc: SidecarProc | undefined;
  const proxy = await startSoakProxy('127.0.0.1');
  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up = await startUpstream(join(work, 'tls'), caPem, opts.ttl);
    const creds = join(work, 'credentials');
    mkdirSync(creds, { mode: 0o700 });
    replaceFile(join(creds, 'apikey'), API_KEY);
    replaceFile(join(creds, 'password'), PASSWORD);
    sc = await startSidecar(join(work, 'sc'), up, caFile, opts.engine, `soak-${opts.engine}`, {}, {
      service: { proxy: opts.direct ? 'none' : proxy.url },
      // The product's default budget unless --gentoken-per-minute is given: scheduled renewals of
      // 2 s tokens (~45 a minute) are not held back by it, only the calls answers trigger.
      ...(opts.gentokenPerMinute === undefined ? {} : { token: { maxGentokenPerMinute: opts.gentokenPerMinute } }),
      credentials: { apiKeyFile: join(creds, 'apikey'), passwordFile: join(creds, 'password') },
    });
    const { pid } = sc.procs[0]!;
    // Every line is read as it arrives: the process keeps only its last 2000, which an hour's
    // token renewals fill long before the end (a rotation after that went unseen; bench/HISTORY.md).
    const warnings = new Map<string, number>();
    let warnLines = 0;
    let logLines = 0;
    let credentialChanges = 0;
    sc.procs[0]!.onLine((l) => {
      logLines++;
      if (l.includes('credentials changed')) credentialChanges++;
      if (!l.includes('"level":"warn"') && !l.includes('"level":"error"')) return;
      warnLines++;
      const k = warningKey(l);
      warnings.set(k, (warnings.get(k) ?? 0) + 1);
    });
    const warm = await touch(sc.port, '/pub/b2b/v1/json1k', 20);
    if (warm.some((s) => s !== 200)) throw new Error(`warm-up requests failed: ${warm.join(',')}`);
    const before = await up.control.stats();
    process.stderr.write(`soak: ${opts.seconds} s, ${opts.connections} wrk connections + ${opts.churnClients} churning clients, tokens live ${opts.ttl} s, ` +
      `revocation every ${opts.revokeEvery} s, idle tunnels reset every ${opts.resetEvery} s, rotation every ${Math.round(opts.rotateEvery ?? opts.seconds / 4)} s, sample every ${sampleEvery} s, engine ${opts.engine}\n`);

    let loadDone = false;
    const started = performance.now();
    const elapsed = () => (performance.now() - started) / 1000;
    const every = async (seconds: number, what: () => Promise<void> | void) => {
      while (!loadDone) {
        const wake = performance.now() + seconds * 1000;
        while (!loadDone && performance.now() < wake) await sleep(Math.max(0, Math.min(250, wake - performance.now())));
        if (loadDone) break;
        await what();
      }
    };
    let revocations = 0;
    let revokeErrors = 0;
    const revoker = every(opts.revokeEvery, async () => {
      try {
        await up.control.revoke();
        revocations++;
      } catch {
        revokeErrors++;
      }
    });
    const resetter = opts.resetEvery > 0 ? every(opts.resetEvery, () => void proxy.resetIdle(RESET_IDLE_MS)) : Promise.resolve();
    const samples: Sample[] = [];
    // Where private memory sits, by kind of mapping, as the judged half begins and at the end:
    // a slope in USS is then located (allocator arenas, V8's heap, code space) rather than guessed.
    let atHalf: Breakdown | undefined;
    const sampler = every(sampleEvery, async () => {
      const s = await sample(pid, sc!.adminPort, elapsed());
      if (s) samples.push(s);
      if (s && !atHalf && s.t >= opts.seconds / 2) atHalf = breakdown(pid, s.t);
    });
    // Rotations every quarter of the run (or --rotate-every): a leak per rotation shows as a slope
    // in the second half, which holds at least one of them.
    const rotateEvery = opts.rotateEvery ?? opts.seconds / 4;
    const rotations: string[] = [];
    let rotationsApplied = 0;
    const rotator = every(rotateEvery, async () => {
      const password = `${PASSWORD}-rotated-${rotations.length + 1}`;
      const r = await up.control.request('POST', '/_simulator/password', { password });
      if (r.status !== 200) {
        rotations.push(`simulator refused: ${r.status}`);
        return;
      }
      const seen = credentialChanges;
      const at = elapsed();
      replaceFile(join(creds, 'password'), password);
      const deadline = performance.now() + 15_000;
      while (performance.now() < deadline && credentialChanges === seen) await sleep(100);
      const applied = credentialChanges > seen;
      if (applied) rotationsApplied++;
      rotations.push(`${at.toFixed(0)} s${applied ? '' : ' (not applied within 15 s)'}`);
    });
    const churn = startChurn(sc.port, '/pub/b2b/v1/json1k', opts.churnClients, 20, 20);
    let load: LoadResult;
    try {
      load = await runLoad({
        url: `http://127.0.0.1:${sc.port}/pub/b2b/v1/json1k`, mixPostUrl: `http://127.0.0.1:${sc.port}/pub/b2b/v1/echo`,
        bodyBytes: 4096, connections: opts.connections, seconds: opts.seconds, captureFailures: true,
      }, work);
    } finally {
      loadDone = true;
    }
    const atEnd = breakdown(pid, elapsed());
    const churned = await churn.stop();
    await Promise.all([revoker, resetter, sampler, rotator]);
    const after = await up.control.stats();
    const d = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
    const failures = load.badStatus + load.socketErrors + churned.failures;

    // Slopes over the second half: the start (JIT, pools filling, caches warming) is not growth.
    const half = samples.filter((s) => s.t >= opts.seconds / 2);
    const trends = Object.fromEntries((Object.keys(MEASURES) as Measure[]).map((m) => [m, trend(half.filter((s) => Number.isFinite(s[m])).map((s) => [s.t, s[m] / MEASURES[m].unit] as const))])) as Record<Measure, Trend>;
    // Slopes are judged only over runs long enough for warm-up to be over (a 15 s CI run's second
    // half is still warming up: its slope, extrapolated to an hour, says nothing about a leak).
    const judged = opts.seconds >= MIN_JUDGED_SECONDS;
    const over = !judged ? [] : (Object.keys(MEASURES) as Measure[]).filter((m) => trends[m].slopePerHour - 2 * (Number.isFinite(trends[m].stderrPerHour) ? trends[m].stderrPerHour : 0) > SLOPE_BOUNDS[m]);
    const tooFew = judged && half.length < 5;

    const rotated = rotations.length > 0 && rotationsApplied === rotations.length;
    const pass = failures === 0 && load.requests > 0 && over.length === 0 && !tooFew && rotated;
    const f1 = (n: number) => (Number.isFinite(n) ? n.toFixed(1) : 'n/a');
    const first = (m: Measure) => (samples[0] ? samples[0][m] / MEASURES[m].unit : NaN);
    const last = (m: Measure) => (samples.at(-1) ? samples.at(-1)![m] / MEASURES[m].unit : NaN);
    const peak = (m: Measure) => Math.max(...samples.map((s) => s[m] / MEASURES[m].unit));
    const pstats = proxy.stats();
    const rows: Array<[string, string]> = [
      ['duration', `${load.seconds.toFixed(1)} s; ${opts.connections} wrk connections (${LOAD_TOOL === 'wrk' ? 'GET json1k and POST 4 KiB echo alternating' : 'GET json1k (autocannon)'}) + ${opts.churnClients} clients reconnecting every 20 requests`],
      ['engine', opts.engine],
      ['requests', `${load.requests} (wrk) + ${churned.requests} (churn, over ${churned.connections} connections)`],
      ['requests/s (wrk)', load.rps.toFixed(0)],
      ['failures (status ≥ 400 or socket errors)', `${failures} (wrk: ${load.badStatus} status, ${load.socketErrors} socket; churn: ${churned.failures}${churned.firstFailure ? `, first: ${churned.firstFailure}` : ''})` +
        (load.failedStatuses && Object.keys(load.failedStatuses).length ? `; by status ${JSON.stringify(load.failedStatuses)}; first body: ${load.firstFailedBody ?? ''}` : '')],
      ['latency p50 / p99 / max (wrk)', `${load.p50Ms.toFixed(2)} / ${load.p99Ms.toFixed(2)} / ${load.maxMs.toFixed(1)} ms`],
      ['token lifetime; gentoken budget', `${opts.ttl} s; token.maxGentokenPerMinute ${opts.gentokenPerMinute ?? 'default'}`],
      ['server-side revocations', `${revocations}${revokeErrors ? ` (${revokeErrors} failed)` : ''}`],
      ['gentoken calls (simulator stats)', `${d('tokenRequests')} (${d('tokensIssued')} issued)`],
      ['upstream 401s (revoked token presented; replayed by the sidecar)', `${d('unauthorizedApiRequests')} (${d('revokedTokenPresented')} revoked, ${d('expiredTokenPresented')} expired)`],
      ['forward proxy (service.proxy)', `${pstats.tunnels} tunnels, ${pstats.resets} reset after ${RESET_IDLE_MS} ms idle (${opts.resetEvery > 0 ? `checked every ${opts.resetEvery} s` : 'resets off'})`],
      ['credential rotations (password file replaced)', `${rotationsApplied} of ${rotations.length} applied, at ${rotations.join(', ') || '—'}`],
      ['samples', `${samples.length}, every ${sampleEvery} s; ${half.length} in the second half`],
      ['sidecar log lines (all levels)', String(logLines)],
      ['sidecar warn/error log lines', warnLines ? `${warnLines}: ${[...warnings].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([k, n]) => `${n}× ${k}`).join('; ')}` : '0'],
      ['result', pass ? 'PASS' : `FAIL${failures ? ` (${failures} failed requests)` : ''}${over.length ? ` (slope above bound: ${over.join(', ')})` : ''}${tooFew ? ' (too few samples)' : ''}${rotated ? '' : ' (a rotation not applied)'}`],
    ];
    const slopeRows = (Object.keys(MEASURES) as Measure[]).map((m) => {
      const { label, unitName } = MEASURES[m];
      const tr = trends[m];
      return `| ${label} | ${f1(first(m))} / ${f1(last(m))} / ${f1(peak(m))} ${unitName} | ${f1(tr.slopePerHour)} ± ${f1(tr.stderrPerHour)} ${unitName}/h | ${SLOPE_BOUNDS[m]} ${unitName}/h | ${!judged ? `not judged (runs under ${MIN_JUDGED_SECONDS} s)` : over.includes(m) ? 'above' : 'within'} |`;
    });
    const md = [
      '# b2b-sidecar soak', '',
      `${new Date().toISOString()} · Node ${process.version} · load: ${LOAD_TOOL} · pinning: ${HAS_TASKSET ? 'sidecar on CPU 1, load, churn, proxy + simulator on CPU 0' : 'none'}`, '',
      '| measure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`), '',
      'Slopes over the second half (least squares ± one standard error; a bound is missed when slope − 2 standard errors is above it):', '',
      '| sidecar | first / last / peak sample | slope | bound | verdict |', '|---|---|---|---|---|', ...slopeRows, '',
      ...breakdownRows(atHalf, atEnd),
      `Command: \`npm run bench:soak${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\``, '',
    ].join('\n');
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(opts.out, md);
    writeFileSync(opts.out.replace(/\.md$/, '') + '-samples.csv', ['t_s,rss_bytes,uss_bytes,heap_used_bytes,fds,loop_p99_s', ...samples.map((s) => [s.t.toFixed(1), s.rss, s.uss, s.heapUsed, s.fds, s.loopP99].join(','))].join('\n') + '\n');
    process.stdout.write(md + `\nwritten to ${relative(process.cwd(), opts.out)} (samples beside it, .csv)\n`);
    return pass ? 0 : 1;
  } finally {
    await proxy.close();
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  (code) => { process.exitCode = code; },
  async (err: unknown) => {
    process.stderr.write(`soak failed: ${(err as Error).stack ?? String(err)}\n`);
    await stopAll();
    process.exitCode = 1;
  },
);
