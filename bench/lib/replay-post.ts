/**
 * The POST benchmark of issue 14: what keeping a copy of each request body for a 401 replay
 * (`src/replay-body.ts`) costs, against the same build with `proxy.replayBodyLimitBytes: 0`.
 * Both run as fresh sidecars (default engine) in the same rounds, alternating; every body kind is
 * measured in each process after one shared warm-up.
 */
import { join } from 'node:path';
import { runLoad, type LoadResult } from './load.js';
import { cpuMicros } from './proc.js';
import { startSidecar, type SidecarProc, type Upstream } from './setup.js';

export const REPLAY_CONFIGS = ['replay-on', 'replay-off'] as const;
export type ReplayConfig = (typeof REPLAY_CONFIGS)[number];

export interface BodyKind {
  name: string;
  label: string;
  bodyBytes: number;
  /** Sent chunked (no Content-Length) in pieces of this size. */
  chunkBytes?: number;
}

/** Small and medium Content-Length bodies (both under the default 1 MiB limit, so copied) and a chunked one. */
export const BODY_KINDS: readonly BodyKind[] = [
  { name: 'cl-1k', label: '1 KiB, Content-Length', bodyBytes: 1024 },
  { name: 'cl-64k', label: '64 KiB, Content-Length', bodyBytes: 64 * 1024 },
  { name: 'chunked-16k', label: '16 KiB chunked (4 × 4 KiB)', bodyBytes: 16 * 1024, chunkBytes: 4096 },
];

export interface ReplayMeasure {
  kind: string;
  load: LoadResult;
  /** Proxy CPU over the window ÷ requests, µs. */
  cpuUs: number;
  /** Proxy CPU over the window ÷ its length: near 100 % means the proxy, not the load side, set the pace. */
  busyPct: number;
}

export interface ReplaySample {
  round: number;
  readyMs: number;
  measures: ReplayMeasure[];
}

export const replayProxyKeys = (cfg: ReplayConfig): Record<string, unknown> => (cfg === 'replay-off' ? { replayBodyLimitBytes: 0 } : {});

/** One fresh sidecar with replay on or off: warm-up, then each body kind at 50 connections. */
export async function runReplayConfig(
  cfg: ReplayConfig, round: number, dir: string, up: Upstream, caFile: string,
  opts: { warmupSeconds: number; postSeconds: number }, work: string,
): Promise<ReplaySample> {
  let sc: SidecarProc | undefined;
  try {
    sc = await startSidecar(join(dir, cfg), up, caFile, 'undici', cfg, replayProxyKeys(cfg));
    const url = `http://127.0.0.1:${sc.port}/pub/b2b/v1/echo`;
    await runLoad({ url, method: 'POST', bodyBytes: 1024, connections: 50, seconds: opts.warmupSeconds }, work);
    const measures: ReplayMeasure[] = [];
    for (const kind of BODY_KINDS) {
      const c0 = cpuMicros(sc.pids);
      const load = await runLoad({ url, method: 'POST', bodyBytes: kind.bodyBytes, chunkBytes: kind.chunkBytes, connections: 50, seconds: opts.postSeconds }, work);
      const used = cpuMicros(sc.pids) - c0;
      measures.push({ kind: kind.name, load, cpuUs: used / Math.max(1, load.requests), busyPct: (100 * used) / 1e6 / load.seconds });
    }
    return { round, readyMs: sc.readyMs, measures };
  } finally {
    await sc?.stop();
  }
}
