/**
 * What each of the sidecar's V8 settings costs the bare undici floor (finding 29): the floor with
 * none, each one alone and all three (bench/floor-variant.mjs), fresh processes pinned like the
 * benchmark's proxies, alternating rounds of GET 1 KiB at 50 connections (CPU per request after a
 * warm-up) and a POST 4 KiB window (peak RSS, VmHWM).
 *
 *   npm run build && node --import tsx bench/floor-settings.ts [--rounds N (4)]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runLoad } from './lib/load.js';
import { cpuMicros, MB, statusBytes } from './lib/proc.js';
import { API_KEY, prepareTls, proxyEnv, ROOT, sidecarCli, startUpstream } from './lib/setup.js';
import { pinSelf, PROXY_CPU, spawnManaged, stopAll } from './lib/spawn.js';
import { median } from './lib/stats.js';

const roundsAt = process.argv.indexOf('--rounds');
const rounds = roundsAt >= 0 ? Number(process.argv[roundsAt + 1]) : 4;
const VARIANTS = ['', 'liftoff', 'young', 'growth', 'liftoff,young,growth'];
const LABEL: Record<string, string> = {
  '': 'none (Node\'s defaults)', liftoff: 'wasm on the baseline tier (`WASM_BASELINE_ONLY_FLAGS`)', young: 'young generation capped', growth: 'old space grows 20 %', 'liftoff,young,growth': 'all three (as shipped)',
};

async function main() {
  if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a whole number ≥ 1');
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-floor-settings-'));
  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up = await startUpstream(join(work, 'tls'), caPem, 900);
    await up.control.setTtl(86_400);
    const token = await up.control.gentoken();
    const dist = join(sidecarCli(), '..');
    const cpu = new Map<string, number[]>(VARIANTS.map((v) => [v, []]));
    const peak = new Map<string, number[]>(VARIANTS.map((v) => [v, []]));
    for (let round = 0; round < rounds; round++) {
      for (const v of round % 2 ? [...VARIANTS].reverse() : VARIANTS) {
        const proc = spawnManaged(`floor-${v || 'none'}`, process.execPath, [join(ROOT, 'bench', 'floor-variant.mjs')], {
          cpu: PROXY_CPU, cwd: ROOT, env: proxyEnv({ UPSTREAM: up.url, CA_FILE: caFile, TOKEN: token, API_KEY, TUNE: v, TUNING_DIST: dist }),
        });
        const port = (JSON.parse(await proc.waitForLine((l) => l.includes('"proxy":"ready"'), 15_000)) as { port: number }).port;
        const url = `http://127.0.0.1:${port}/pub/b2b/v1/json1k`;
        await runLoad({ url, connections: 50, seconds: 2 }, work);
        const c0 = cpuMicros([proc.pid]);
        const get = await runLoad({ url, connections: 50, seconds: 3 }, work);
        const c1 = cpuMicros([proc.pid]);
        await runLoad({ url: `http://127.0.0.1:${port}/pub/b2b/v1/echo`, method: 'POST', bodyBytes: 4096, connections: 50, seconds: 2 }, work);
        cpu.get(v)!.push((c1 - c0) / Math.max(1, get.requests));
        peak.get(v)!.push((statusBytes(proc.pid, 'VmHWM') ?? 0) / MB);
        await proc.stop();
      }
    }
    const base = median(cpu.get('')!)!;
    process.stdout.write(`${rounds} alternating rounds, medians\n| V8 settings on the floor | CPU µs/req GET (rounds) | × the floor | peak RSS |\n|---|---:|---:|---:|\n`);
    for (const v of VARIANTS) {
      const c = median(cpu.get(v)!)!;
      process.stdout.write(`| ${LABEL[v]} | ${c.toFixed(1)} (${cpu.get(v)!.map((x) => x.toFixed(1)).join(' ')}) | ${(c / base).toFixed(3)}× | ${median(peak.get(v)!)!.toFixed(1)} MB |\n`);
    }
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), async (err: unknown) => {
  process.stderr.write(`floor-settings failed: ${(err as Error).stack ?? String(err)}\n`);
  await stopAll();
  process.exit(1);
});
