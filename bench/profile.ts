/**
 * CPU profile of the sidecar under the benchmark's load: upstream (simulator) on CPU 0, the
 * sidecar from dist/ under `node --cpu-prof` on CPU 1, a warm-up, then GET 1 KiB at 50
 * connections; prints the hottest functions (self and inclusive time), dist frames mapped back
 * to src/ through the source maps.
 *
 *   npm run build && node --import tsx bench/profile.ts [--engine undici|http-proxy] [--seconds S] [--connections N] [--path P] [--dist DIR] [--node-options "..."] [--startup (profile start-up only)] [--keep (copy the profile to $TMPDIR/b2b-last.cpuprofile)]
 *     [--bare (profile the bare undici floor, bench/bare-undici.mjs, instead: what any Node proxy built this way pays)]
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { runLoad } from './lib/load.js';
import { cpuMicros } from './lib/proc.js';
import { API_KEY, deployedNodeOptions, PASSWORD, prepareTls, proxyEnv, ROOT, setDistDir, setNodeOptions, sidecarCli, startUpstream } from './lib/setup.js';
import { pinSelf, PROXY_CPU, spawnManaged, stopAll, type Managed } from './lib/spawn.js';
import { summarise } from './profile-summary.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
const engine = arg('--engine', 'undici');
const seconds = Number(arg('--seconds', '3'));
const connections = Number(arg('--connections', '50'));
const path = arg('--path', '/pub/b2b/v1/json1k');
const bare = args.includes('--bare');
setDistDir(arg('--dist', join(ROOT, 'dist')));
if (args.includes('--node-options')) setNodeOptions(arg('--node-options', ''));

async function main() {
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-prof-'));
  const profDir = join(work, 'prof');
  mkdirSync(profDir);
  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up = await startUpstream(join(work, 'tls'), caPem, 900);
    const config = {
      listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 },
      service: { baseUrl: up.url, caFile }, credentials: { apiKey: API_KEY, password: PASSWORD },
      proxy: { engine }, log: { level: 'info', requests: false }, shutdown: { delaySeconds: 0, timeoutSeconds: 1 },
    };
    const file = join(work, 'sidecar.yaml');
    writeFileSync(file, stringify(config), { mode: 0o600 });
    let sc: Managed;
    let url: string;
    if (bare) {
      await up.control.setTtl(86_400);
      const env = proxyEnv({ UPSTREAM: up.url, CA_FILE: caFile, TOKEN: await up.control.gentoken(), API_KEY });
      sc = spawnManaged('bare-undici', process.execPath, ['--cpu-prof', '--cpu-prof-dir', profDir, join(ROOT, 'bench', 'bare-undici.mjs')], { cpu: PROXY_CPU, cwd: ROOT, env });
      url = `http://127.0.0.1:${(JSON.parse(await sc.waitForLine((l) => l.includes('"proxy":"ready"'), 15_000)) as { port: number }).port}${path}`;
    } else {
      sc = spawnManaged('sidecar', process.execPath, ['--cpu-prof', '--cpu-prof-dir', profDir, sidecarCli(), 'run', '--config', file], { cpu: PROXY_CPU, cwd: ROOT, env: proxyEnv({ NODE_OPTIONS: deployedNodeOptions() }) });
      const started = JSON.parse(await sc.waitForLine((l) => l.includes('"sidecar started"'), 20_000)) as { listen: string };
      await sc.waitForLine((l) => l.includes('"token obtained"'), 20_000);
      url = `http://127.0.0.1:${started.listen.split(':').pop()}${path}`;
    }
    if (args.includes('--startup')) {
      process.stdout.write(`startup only: ${(cpuMicros([sc.pid]) / 1000).toFixed(0)} ms CPU until the first token\n`);
    } else {
      await runLoad({ url, connections, seconds: 1 }, work);
      const c0 = cpuMicros([sc.pid]);
      const r = await runLoad({ url, connections, seconds }, work);
      const c1 = cpuMicros([sc.pid]);
      process.stdout.write(`${bare ? 'bare undici floor' : engine}: ${r.requests} requests, ${r.rps.toFixed(0)} req/s, ${((c1 - c0) / Math.max(1, r.requests)).toFixed(1)} µs CPU/request, ${r.badStatus + r.socketErrors} failed\n`);
    }
    await sc.stop(10_000);
    if (args.includes('--keep')) for (const f of readdirSync(profDir)) writeFileSync(join(tmpdir(), 'b2b-last.cpuprofile'), readFileSync(join(profDir, f)));
    const prof = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
    if (!prof) throw new Error('no profile written');
    process.stdout.write(summarise(join(profDir, prof), 25, '/src/'));
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch(async (err: unknown) => {
  process.stderr.write(`profile failed: ${(err as Error).stack ?? String(err)}\n`);
  await stopAll();
  process.exitCode = 1;
});
