/**
 * Where the sidecar's memory goes (issue 14): a sidecar from dist/ on the proxy CPU, with a probe
 * preloaded through `--import` (a Node option, not a V8 flag, so Node keeps its code cache) that
 * prints `process.memoryUsage()` and V8's heap spaces on SIGUSR2. Sampled after start, after
 * `--idle-seconds` idle (10 requests first), and at the end of a 50-connection GET load and of a
 * 50-connection POST 4 KiB load; each
 * sample also splits /proc/PID/smaps into kinds of mapping (Rss and private bytes each).
 *
 * Each sample also lists the thread count and the largest anonymous mappings (a malloc arena of a
 * V8 worker thread shows as one; bench/HISTORY.md, Node 24).
 *
 *   npm run build && node --import tsx bench/memory.ts [--engine undici|http-proxy] [--idle-seconds S] [--seconds S] [--dist DIR] [--replay-off] [--bare (the bare undici floor instead)]
 *     [--stream-mib N (before the loads, one N MiB download and upload through it, as the benchmark's streaming part)]
 *     [--node-options "..." (the sidecar's NODE_OPTIONS instead of the Dockerfile's)] [--v8-flags "..." (more V8 flags, set right after the sidecar's own, so they override them; not with --bare)]
 *     [--node-args "..." (options on node's command line, before the script: V8 flags there are read at
 *     start, at the price of Node's code caches)]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad } from './lib/load.js';
import { kbFields, MB, smapsByKind } from './lib/proc.js';
import { API_KEY, deployedNodeOptions, PASSWORD, prepareTls, proxyEnv, ROOT, setDistDir, sidecarCli, sleep, startUpstream, touch } from './lib/setup.js';
import { streamThrough } from './lib/stream.js';
import { pinSelf, PROXY_CPU, spawnManaged, stopAll, type Managed } from './lib/spawn.js';
import { stringify } from 'yaml';

const args = process.argv.slice(2);
const arg = (name: string, def: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
const engine = arg('--engine', 'undici');
const idleSeconds = Number(arg('--idle-seconds', '30'));
const loadSeconds = Number(arg('--seconds', '5'));
const streamMiB = Number(arg('--stream-mib', '0'));
const bare = args.includes('--bare');
const nodeOptions = arg('--node-options', '\0');
const v8Flags = arg('--v8-flags', '');
const nodeArgs = arg('--node-args', '').split(' ').filter(Boolean);
setDistDir(arg('--dist', join(ROOT, 'dist')));

const PROBE = `
import v8 from 'node:v8';
// --v8-flags: set right after the sidecar's own wasm and heap flags, i.e. where it tunes V8.
const extra = ${JSON.stringify(v8Flags)}.split(' ').filter(Boolean);
const set = v8.setFlagsFromString;
v8.setFlagsFromString = (flag) => { set(flag); if (flag.startsWith('--heap-growing-percent')) for (const x of extra) set(x); };
process.on('SIGUSR2', () => {
  const m = process.memoryUsage();
  const spaces = Object.fromEntries(v8.getHeapSpaceStatistics().map((s) => [s.space_name, { size: s.space_size, used: s.space_used_size }]));
  process.stderr.write('MEMPROBE ' + JSON.stringify({ ...m, spaces }) + '\\n');
});
`;

async function sample(proc: Managed, label: string): Promise<void> {
  const before = proc.lines.length;
  process.kill(proc.pid, 'SIGUSR2');
  const line = await proc.waitForLine((l) => l.startsWith('MEMPROBE ') && proc.lines.indexOf(l) >= before, 5000);
  const m = JSON.parse(line.slice('MEMPROBE '.length)) as Record<string, number> & { spaces: Record<string, { size: number; used: number }> };
  const status = kbFields(readFileSync(`/proc/${proc.pid}/status`, 'utf8'));
  const f = (n: number | undefined) => ((n ?? 0) / MB).toFixed(1).padStart(7);
  process.stdout.write(`\n## ${label}\nVmRSS ${f(status.get('VmRSS'))} MB  RssAnon ${f(status.get('RssAnon'))}  RssFile ${f(status.get('RssFile'))}  VmHWM ${f(status.get('VmHWM'))}\n`);
  process.stdout.write(`JS: rss ${f(m['rss'])}  heapTotal ${f(m['heapTotal'])}  heapUsed ${f(m['heapUsed'])}  external ${f(m['external'])}  arrayBuffers ${f(m['arrayBuffers'])}\n`);
  process.stdout.write('V8 spaces (size / used MB): ' + Object.entries(m.spaces).filter(([, s]) => s.size > 0)
    .map(([n, s]) => `${n} ${(s.size / MB).toFixed(1)}/${(s.used / MB).toFixed(1)}`).join(', ') + '\n');
  const threads = /Threads:\s+(\d+)/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'))?.[1];
  const anonymous = readFileSync(`/proc/${proc.pid}/smaps`, 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/)
    .filter((b) => b.slice(0, b.indexOf('\n')).trim().split(/\s+/).length === 5)
    .map((b) => { const k = kbFields(b); return { size: (k.get('Size') ?? 0) / MB, rss: (k.get('Rss') ?? 0) / MB }; })
    .sort((a, b) => b.rss - a.rss).slice(0, 6);
  process.stdout.write(`threads ${threads}; largest anonymous mappings (rss/size MB): ${anonymous.map((a) => `${a.rss.toFixed(1)}/${a.size.toFixed(1)}`).join(' ')}\n`);
  for (const [kind, v] of [...smapsByKind(proc.pid)].sort((a, b) => b[1].rss - a[1].rss)) {
    if (v.rss >= 0.05 * MB) process.stdout.write(`  ${f(v.rss)} MB rss ${f(v.priv)} MB private  ${kind}\n`);
  }
}

async function main() {
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-mem-'));
  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up = await startUpstream(join(work, 'tls'), caPem, 900);
    const probe = join(work, 'probe.mjs');
    writeFileSync(probe, PROBE);
    let proc: Managed;
    let port: number;
    if (bare) {
      await up.control.setTtl(86_400);
      const token = await up.control.gentoken();
      const env = proxyEnv({ UPSTREAM: up.url, CA_FILE: caFile, TOKEN: token, API_KEY });
      proc = spawnManaged('bare-undici', process.execPath, [...nodeArgs, '--import', probe, join(ROOT, 'bench', 'bare-undici.mjs')], { cpu: PROXY_CPU, env, cwd: ROOT });
      port = (JSON.parse(await proc.waitForLine((l) => l.includes('"proxy":"ready"'), 15_000)) as { port: number }).port;
    } else {
      const file = join(work, 'sidecar.yaml');
      writeFileSync(file, stringify({
        listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 },
        service: { baseUrl: up.url, caFile }, credentials: { apiKey: API_KEY, password: PASSWORD },
        proxy: { engine, ...(args.includes('--replay-off') ? { replayBodyLimitBytes: 0 } : {}) }, guard: { allow: ['127.0.0.1/32', '::1/128'] }, log: { level: 'info', requests: false },
        shutdown: { delaySeconds: 0, timeoutSeconds: 1 },
      }), { mode: 0o600 });
      proc = spawnManaged('sidecar', process.execPath, [...nodeArgs, '--import', probe, sidecarCli(), 'run', '--config', file],
        { cpu: PROXY_CPU, cwd: ROOT, env: proxyEnv({ NODE_OPTIONS: nodeOptions === '\0' ? deployedNodeOptions() : nodeOptions }) });
      const started = JSON.parse(await proc.waitForLine((l) => l.includes('"sidecar started"'), 20_000)) as { listen: string };
      await proc.waitForLine((l) => l.includes('"token obtained"'), 20_000);
      port = Number(started.listen.split(':').pop());
    }
    process.stdout.write(`# memory of ${bare ? 'the bare undici floor' : `b2b-sidecar, engine ${engine}`} (pid ${proc.pid})\n`);
    await sleep(500);
    await sample(proc, 'ready');
    await touch(port, '/pub/b2b/v1/json1k', 10);
    await sleep(idleSeconds * 1000);
    await sample(proc, `after 10 requests and ${idleSeconds} s idle`);
    if (streamMiB > 0) {
      // As the benchmark's streaming part: one transfer each way, RSS sampled every 25 ms.
      for (const direction of ['down', 'up'] as const) {
        const r = await streamThrough(port, proc.pid, direction, streamMiB * 1024 * 1024, 300_000);
        await sample(proc, `right after streaming ${streamMiB} MiB ${direction}: ${r.ok ? 'ok' : r.detail}, RSS growth ${((r.rssPeak - r.rssBefore) / MB).toFixed(1)} MB`);
      }
    }
    await runLoad({ url: `http://127.0.0.1:${port}/pub/b2b/v1/json1k`, connections: 50, seconds: loadSeconds }, work);
    await sample(proc, `right after ${loadSeconds} s of GET at 50 connections`);
    await runLoad({ url: `http://127.0.0.1:${port}/pub/b2b/v1/echo`, method: 'POST', bodyBytes: 4096, connections: 50, seconds: loadSeconds }, work);
    await sample(proc, `right after ${loadSeconds} s of POST 4 KiB at 50 connections (as in the benchmark)`);
    await proc.stop();
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch(async (err: unknown) => {
  process.stderr.write(`memory failed: ${(err as Error).stack ?? String(err)}\n`);
  await stopAll();
  process.exitCode = 1;
});
