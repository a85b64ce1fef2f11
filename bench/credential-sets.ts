/**
 * Many credential sets in one process (docs/credential-sets.md): a sidecar from dist/ serving N
 * sets (default 1,000, each its own ApiKey and password, chosen by path prefix `/o<i>/`) against
 * the simulator knowing the N keys, each token valid only with its own key, gentoken answering
 * after `--gentoken-ms` (default 20). Measured in the same run against a sidecar with one set:
 *
 * - memory per set at idle: (heap used after a full GC with N sets − with 1) ÷ (N − 1), and the
 *   same of RSS (target ≤ 50 KB per set);
 * - the time from spawn until /readyz says every set is ready (target ≤ 30 s with gentoken at 20 ms);
 * - the largest number of gentoken calls in any one second during start-up, and over
 *   `--renew-minutes` of renewals with `--ttl`-second tokens (the spread of renewals).
 *
 *   npm run build && node --import tsx bench/credential-sets.ts [--sets 1000] [--gentoken-ms 20] [--ttl 30] [--renew-minutes 30] [--dist DIR]
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { stringify } from 'yaml';
import { createB2bSimulator } from '../src/simulator/b2b-simulator.js';
import { generateTlsMaterial } from '../src/simulator/certs.js';
import { kbFields, MB } from './lib/proc.js';
import { deployedNodeOptions, freePort, proxyEnv, ROOT, setDistDir, sidecarCli, sleep } from './lib/setup.js';
import { spawnManaged, stopAll, type Managed } from './lib/spawn.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
const SETS = Number(arg('--sets', '1000'));
const GENTOKEN_MS = Number(arg('--gentoken-ms', '20'));
const TTL = Number(arg('--ttl', '30'));
const RENEW_MINUTES = Number(arg('--renew-minutes', '30'));
setDistDir(arg('--dist', join(ROOT, 'dist')));

/** Preloaded with --import: on SIGUSR2, a full GC, then the heap and RSS on stderr. */
const PROBE = `
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
v8.setFlagsFromString('--expose_gc');
const gc = runInNewContext('gc');
process.on('SIGUSR2', () => {
  gc(); gc();
  const m = process.memoryUsage();
  process.stderr.write('MEMPROBE ' + JSON.stringify({ heapUsed: m.heapUsed, rss: m.rss, external: m.external }) + '\\n');
});
`;

const key = (i: number) => `bench-key-${String(i).padStart(5, '0')}`;
const password = (i: number) => `bench-password-${String(i).padStart(5, '0')}`;

function getJson(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/** The largest number of entries of `times` (ms, sorted) inside any window of `windowMs`. */
export function peakPerWindow(times: readonly number[], from: number, to: number, windowMs = 1000): number {
  let peak = 0;
  let lo = 0;
  const inRange = times.filter((t) => t >= from && t < to);
  for (let hi = 0; hi < inRange.length; hi++) {
    while (inRange[hi]! - inRange[lo]! >= windowMs) lo++;
    peak = Math.max(peak, hi - lo + 1);
  }
  return peak;
}

async function memory(proc: Managed): Promise<{ heapUsed: number; rss: number }> {
  await sleep(3000); // let start-up's garbage go first
  const samples: Array<{ heapUsed: number; rss: number }> = [];
  for (let i = 0; i < 3; i++) {
    const seen = proc.lines.length;
    process.kill(proc.pid, 'SIGUSR2');
    const line = await proc.waitForLine((l) => l.startsWith('MEMPROBE ') && proc.lines.indexOf(l) >= seen, 10_000);
    const m = JSON.parse(line.slice('MEMPROBE '.length)) as { heapUsed: number };
    const rss = (kbFields(readFileSync(`/proc/${proc.pid}/status`, 'utf8')).get('VmRSS') ?? 0);
    samples.push({ heapUsed: m.heapUsed, rss });
    await sleep(1000);
  }
  // The smallest of three: a GC right after a timer's allocation is the noise to drop.
  return { heapUsed: Math.min(...samples.map((s) => s.heapUsed)), rss: Math.min(...samples.map((s) => s.rss)) };
}

async function runSidecar(work: string, caFile: string, baseUrl: string, sets: number, name: string): Promise<{ proc: Managed; port: number; adminPort: number; readyMs: number }> {
  const port = await freePort();
  const adminPort = await freePort();
  const credentials = sets === 1
    ? { apiKey: key(0), password: password(0) }
    : Array.from({ length: sets }, (_, i) => ({ id: `o${i}`, apiKey: key(i), password: password(i), pathPrefix: `/o${i}/` }));
  const config = join(work, `${name}.yaml`);
  writeFileSync(config, stringify({
    listen: { host: '127.0.0.1', port }, admin: { host: '127.0.0.1', port: adminPort },
    service: { baseUrl, caFile }, credentials, token: { maxLifetimeSeconds: 900 }, log: { level: 'warn' },
  }), { mode: 0o600 });
  const probe = join(work, 'probe.mjs');
  writeFileSync(probe, PROBE);
  const proc = spawnManaged(name, process.execPath, [sidecarCli(), 'run', '--config', config], {
    env: proxyEnv({ NODE_OPTIONS: `${deployedNodeOptions()} --import ${probe}` }),
  });
  const started = performance.now();
  for (;;) {
    const ready = await getJson(adminPort, '/readyz');
    if (ready.status === 200) break;
    if (performance.now() - started > 300_000) throw new Error(`${name}: not ready after 300 s: ${ready.body}`);
    await sleep(50);
  }
  return { proc, port, adminPort, readyMs: performance.now() - proc.spawnedAt };
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'b2b-sets-bench-'));
  const tls = await generateTlsMaterial(['localhost', '127.0.0.1']);
  const caFile = join(work, 'ca.pem');
  writeFileSync(caFile, tls.caPem);
  const sim = createB2bSimulator({
    apiKey: key(0), password: password(0), ttlSeconds: TTL, tls,
    otherKeys: Array.from({ length: SETS - 1 }, (_, i) => ({ apiKey: key(i + 1), password: password(i + 1) })),
  });
  const { url } = await sim.start();
  sim.faults.setLatency(GENTOKEN_MS, 'token');
  try {
    const one = await runSidecar(work, caFile, url, 1, 'one-set');
    const oneMemory = await memory(one.proc);
    await one.proc.stop();

    const before = sim.tokenRequestTimes.length;
    const spawnAt = performance.now();
    const many = await runSidecar(work, caFile, url, SETS, `${SETS}-sets`);
    const startTimes = sim.tokenRequestTimes.slice(before);
    const startPeak = peakPerWindow(startTimes, spawnAt, performance.now());
    const manyMemory = await memory(many.proc);
    // A request through a few sets: each is served with its own token.
    const served = await Promise.all([0, Math.floor(SETS / 2), SETS - 1].map((i) => getJson(many.port, `/o${i}/pub/b2b/v1/json1k`)));

    const renewFrom = performance.now();
    const renewCountBefore = sim.tokenRequestTimes.length;
    await sleep(RENEW_MINUTES * 60_000);
    const renewTo = performance.now();
    const renewPeak = peakPerWindow(sim.tokenRequestTimes, renewFrom, renewTo);
    const renewCalls = sim.tokenRequestTimes.length - renewCountBefore;
    const stillReady = await getJson(many.adminPort, '/readyz');
    await many.proc.stop();

    const perSetHeap = (manyMemory.heapUsed - oneMemory.heapUsed) / (SETS - 1);
    const perSetRss = (manyMemory.rss - oneMemory.rss) / (SETS - 1);
    const lines = [
      `# ${SETS} credential sets in one process (Node ${process.version}, gentoken ${GENTOKEN_MS} ms, tokens ${TTL} s)`,
      '',
      '| figure | value | target |',
      '|---|---:|---|',
      `| heap used after GC, 1 set / ${SETS} sets (MB) | ${(oneMemory.heapUsed / MB).toFixed(1)} / ${(manyMemory.heapUsed / MB).toFixed(1)} | |`,
      `| RSS, 1 set / ${SETS} sets (MB) | ${(oneMemory.rss / MB).toFixed(1)} / ${(manyMemory.rss / MB).toFixed(1)} | |`,
      `| heap per set (KB) | ${(perSetHeap / 1024).toFixed(1)} | ≤ 50 |`,
      `| RSS per set (KB) | ${(perSetRss / 1024).toFixed(1)} | ≤ 50 |`,
      `| spawn → all ${SETS} ready (s) | ${(many.readyMs / 1000).toFixed(1)} (1 set: ${(one.readyMs / 1000).toFixed(2)}) | ≤ 30 |`,
      `| gentoken calls at start-up: total / most in any 1 s | ${startTimes.length} / ${startPeak} | |`,
      `| renewals over ${RENEW_MINUTES} min: calls / most in any 1 s / mean per s | ${renewCalls} / ${renewPeak} / ${(renewCalls / ((renewTo - renewFrom) / 1000)).toFixed(1)} | |`,
      `| three sets served through their prefixes | ${served.map((s) => s.status).join(', ')} | 200 each |`,
      `| ready after the renewals | ${stillReady.status} | 200 |`,
      `| expired or revoked tokens presented | ${sim.stats.expiredTokenPresented + sim.stats.revokedTokenPresented} | 0 |`,
      '',
    ];
    process.stdout.write(lines.join('\n'));
    writeFileSync(join(ROOT, 'bench', 'results', 'credential-sets-latest.md'), lines.join('\n'));
  } finally {
    await stopAll();
    await sim.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
