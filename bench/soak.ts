/**
 * `npm run bench:soak` (issue 3): concurrent traffic through the sidecar for 60 s (bounded) while
 * tokens live 2 s and the simulator revokes every issued token periodically. Reports requests,
 * failures (must be 0: the exit code is 1 otherwise), gentoken calls, upstream 401s (replayed by
 * the sidecar) and the sidecar's RSS at start and end. Loopback only.
 *
 *   node --import tsx bench/soak.ts [--seconds N] [--connections N] [--revoke-every S] [--ttl S]
 *     [--engine undici|http-proxy] [--out FILE] [--dist DIR]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { LOAD_TOOL, runLoad, type LoadResult } from './lib/load.js';
import { MB, statusBytes } from './lib/proc.js';
import { prepareTls, ROOT, setDistDir, sleep, startSidecar, startUpstream, touch, type Engine, type SidecarProc } from './lib/setup.js';
import { HAS_TASKSET, pinSelf, stopAll } from './lib/spawn.js';

interface Options { seconds: number; connections: number; revokeEvery: number; ttl: number; engine: Engine; out: string }

function parseArgs(argv: string[]): Options {
  const o: Options = { seconds: 60, connections: 20, revokeEvery: 5, ttl: 2, engine: 'undici', out: join(ROOT, 'bench', 'results', 'soak-latest.md') };
  const num = (name: string, v: string | undefined, lo: number, hi: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < lo || n > hi) throw new Error(`${name} must be an integer from ${lo} to ${hi}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = () => argv[++i];
    switch (a) {
      case '--seconds': o.seconds = num(a, next(), 1, 3600); break;
      case '--connections': o.connections = num(a, next(), 1, 500); break;
      case '--revoke-every': o.revokeEvery = num(a, next(), 1, 3600); break;
      case '--ttl': o.ttl = num(a, next(), 2, 3600); break;
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

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-soak-'));
  let sc: SidecarProc | undefined;
  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up = await startUpstream(join(work, 'tls'), caPem, opts.ttl);
    sc = await startSidecar(join(work, 'sc'), up, caFile, opts.engine, `soak-${opts.engine}`);
    const pid = sc.pids[0]!;
    const warm = await touch(sc.port, '/pub/b2b/v1/json1k', 20);
    if (warm.some((s) => s !== 200)) throw new Error(`warm-up requests failed: ${warm.join(',')}`);
    const rssStart = statusBytes(pid, 'VmRSS') ?? 0;
    const before = await up.control.stats();
    process.stderr.write(`soak: ${opts.seconds} s, ${opts.connections} connections (GET 1 KiB / POST 4 KiB alternating), tokens live ${opts.ttl} s, revocation every ${opts.revokeEvery} s, engine ${opts.engine}\n`);

    // Revocations run alongside the load, bounded in count.
    let revocations = 0;
    let revokeErrors = 0;
    let loadDone = false;
    const maxRevocations = Math.floor(opts.seconds / opts.revokeEvery);
    const revoker = (async () => {
      while (!loadDone && revocations < maxRevocations) {
        await sleep(opts.revokeEvery * 1000);
        if (loadDone) break;
        try {
          await up.control.revoke();
          revocations++;
        } catch {
          revokeErrors++;
        }
      }
    })();
    let rssPeak = rssStart;
    const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, statusBytes(pid, 'VmRSS') ?? 0)), 250);
    let load: LoadResult;
    try {
      load = await runLoad({
        url: `http://127.0.0.1:${sc.port}/pub/b2b/v1/json1k`, mixPostUrl: `http://127.0.0.1:${sc.port}/pub/b2b/v1/echo`,
        bodyBytes: 4096, connections: opts.connections, seconds: opts.seconds, captureFailures: true,
      }, work);
    } finally {
      loadDone = true;
      clearInterval(sampler);
    }
    await revoker;
    const after = await up.control.stats();
    const rssEnd = statusBytes(pid, 'VmRSS') ?? 0;
    const d = (k: string) => (after[k] ?? 0) - (before[k] ?? 0);
    const failures = load.badStatus + load.socketErrors;
    const warnLines = sc.procs[0]!.lines.filter((l) => l.includes('"level":"warn"') || l.includes('"level":"error"'));
    const warnings = warnLines.length;
    const distinct = new Map<string, number>();
    for (const l of warnLines) {
      let k = l;
      try {
        const j = JSON.parse(l) as { level?: string; message?: string; reason?: string; status?: number; code?: string };
        k = `${j.level}: ${j.message}${j.reason ? ` (${j.reason})` : ''}${j.status ? ` → ${j.status}` : ''}${j.code ? ` [${j.code}]` : ''}`;
      } catch {
        // not JSON: keep the raw line
      }
      distinct.set(k, (distinct.get(k) ?? 0) + 1);
    }
    const rows: Array<[string, string]> = [
      ['duration', `${load.seconds.toFixed(1)} s, ${opts.connections} connections, ${LOAD_TOOL === 'wrk' ? 'GET json1k and POST 4 KiB echo alternating' : 'GET json1k (autocannon)'}`],
      ['engine', opts.engine],
      ['requests', String(load.requests)],
      ['requests/s', load.rps.toFixed(0)],
      ['failures (status ≥ 400 or socket errors)', `${failures} (${load.badStatus} status, ${load.socketErrors} socket)` +
        (load.failedStatuses && Object.keys(load.failedStatuses).length ? `; by status ${JSON.stringify(load.failedStatuses)}; first body: ${load.firstFailedBody ?? ''}` : '')],
      ['latency p50 / p99 / max', `${load.p50Ms.toFixed(2)} / ${load.p99Ms.toFixed(2)} / ${load.maxMs.toFixed(1)} ms`],
      ['token lifetime', `${opts.ttl} s`],
      ['server-side revocations', `${revocations}${revokeErrors ? ` (${revokeErrors} failed)` : ''}`],
      ['gentoken calls (simulator stats)', `${d('tokenRequests')} (${d('tokensIssued')} issued)`],
      ['upstream 401s (revoked token presented; replayed by the sidecar)', `${d('unauthorizedApiRequests')} (${d('revokedTokenPresented')} revoked, ${d('expiredTokenPresented')} expired)`],
      ['sidecar RSS start / end / peak', `${(rssStart / MB).toFixed(1)} / ${(rssEnd / MB).toFixed(1)} / ${(rssPeak / MB).toFixed(1)} MB`],
      ['sidecar warn/error log lines', warnings ? `${warnings}: ${[...distinct].slice(0, 5).map(([k, n]) => `${n}× ${k}`).join('; ')}` : '0'],
      ['result', failures === 0 && load.requests > 0 ? 'PASS (zero failures)' : 'FAIL'],
    ];
    const md = [
      '# b2b-sidecar soak (issue 3)', '',
      `${new Date().toISOString()} · Node ${process.version} · load: ${LOAD_TOOL} · pinning: ${HAS_TASKSET ? 'sidecar on CPU 1, load + simulator on CPU 0' : 'none'}`, '',
      '| measure | value |', '|---|---|', ...rows.map(([k, v]) => `| ${k} | ${v} |`), '',
      `Command: \`npm run bench:soak${process.argv.slice(2).length ? ` -- ${process.argv.slice(2).join(' ')}` : ''}\``, '',
    ].join('\n');
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(opts.out, md);
    process.stdout.write(md + `\nwritten to ${relative(process.cwd(), opts.out)}\n`);
    return failures === 0 && load.requests > 0 ? 0 : 1;
  } finally {
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
