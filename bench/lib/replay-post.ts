/**
 * The POST benchmark of issue 14: what keeping a copy of each request body for a 401 replay
 * (`src/replay-body.ts`) costs, against the same build with `proxy.replayBodyLimitBytes: 0`.
 * Both run as fresh sidecars (default engine) in every round, measured alternately body kind by
 * body kind.
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
  /** Which back-to-back pair of the round this window belongs to. */
  pair: number;
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

/**
 * One round: a fresh sidecar with replay on and one with it off, both started and warmed up, then
 * per body kind the two measured back to back (which goes first alternates by round and kind), so
 * a slow spell of the shared machine hits both sides of a pair alike. Only the one under load
 * works; the other idles on the same CPU.
 */
export async function runReplayRound(
  round: number, dir: string, up: Upstream, caFile: string,
  opts: { warmupSeconds: number; postSeconds: number }, work: string, beforeStart: () => Promise<void>,
): Promise<Map<ReplayConfig, ReplaySample>> {
  const procs = new Map<ReplayConfig, SidecarProc>();
  try {
    for (const cfg of REPLAY_CONFIGS) {
      await beforeStart();
      procs.set(cfg, await startSidecar(join(dir, cfg), up, caFile, 'undici', cfg, replayProxyKeys(cfg)));
    }
    const url = (cfg: ReplayConfig) => `http://127.0.0.1:${procs.get(cfg)!.port}/pub/b2b/v1/echo`;
    for (const cfg of REPLAY_CONFIGS) {
      await runLoad({ url: url(cfg), method: 'POST', bodyBytes: 1024, connections: 50, seconds: opts.warmupSeconds }, work);
    }
    const out = new Map<ReplayConfig, ReplaySample>(REPLAY_CONFIGS.map((c) => [c, { round, readyMs: procs.get(c)!.readyMs, measures: [] }]));
    // Short windows, alternated: on the shared machine the load of other processes changes within
    // seconds, and a pair measured close together sees the same conditions.
    const pairs = Math.max(1, Math.floor(opts.postSeconds));
    for (const [k, kind] of BODY_KINDS.entries()) {
      const spec = (cfg: ReplayConfig) => ({ url: url(cfg), method: 'POST' as const, bodyBytes: kind.bodyBytes, chunkBytes: kind.chunkBytes, connections: 50, seconds: 1 });
      const orderOf = (pair: number) => ((round + k + pair) % 2 ? REPLAY_CONFIGS : [...REPLAY_CONFIGS].reverse());
      // One unmeasured window each, in the order of the first pair: every measured window then
      // follows the same idle gap (the other's window). Without it the process warmed up first sat
      // idle longest, long enough for its pool to close idle upstream connections, and its first
      // window paid ~50 new TLS handshakes (measured: 150–170 instead of 80–95 µs/request).
      for (const cfg of orderOf(0)) await runLoad(spec(cfg), work);
      for (let pair = 0; pair < pairs; pair++) {
        for (const cfg of orderOf(pair)) {
          const sc = procs.get(cfg)!;
          const c0 = cpuMicros(sc.pids);
          const load = await runLoad(spec(cfg), work);
          const used = cpuMicros(sc.pids) - c0;
          out.get(cfg)!.measures.push({ kind: kind.name, pair, load, cpuUs: used / Math.max(1, load.requests), busyPct: (100 * used) / 1e6 / load.seconds });
        }
      }
    }
    return out;
  } finally {
    for (const sc of procs.values()) await sc.stop();
  }
}
