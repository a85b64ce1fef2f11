import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { TlsMaterial } from '../../src/simulator/certs.js';
import { sleep } from './setup.js';
import { spawnManaged, type Managed } from './spawn.js';

/** A store for bench/fleet.ts: the `fleet` section that names it, and how to take it down and back. */
export interface StoreFixture {
  config: Record<string, unknown>;
  /** Extra environment of each replica (the Kubernetes service host, say). */
  env: Record<string, string>;
  stop?: () => Promise<void>;
  start?: () => Promise<void>;
  /** The store's own counters since start, in words (reads, writes, events per minute). */
  load?: () => Promise<string>;
  close(): Promise<void>;
}

export async function fleetStoreFixture(kind: 'redis' | 'sqlite' | 'kubernetes', work: string, _tls: TlsMaterial): Promise<StoreFixture> {
  if (kind === 'sqlite') {
    return { config: { store: 'sqlite', sqlitePath: join(work, 'fleet.db') }, env: {}, close: async () => undefined };
  }
  if (kind === 'redis') return redisFixture(work);
  throw new Error(`store ${kind}: not in this benchmark yet`);
}

/** A real redis-server (Debian's package) on a unix socket in `work`; persistence off. */
async function redisFixture(work: string): Promise<StoreFixture> {
  const socket = join(work, 'redis.sock');
  let proc: Managed | undefined;
  const startedAt = performance.now();
  const start = async () => {
    proc = spawnManaged('redis', 'redis-server', ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no'], { cwd: work });
    await proc.waitForLine((l) => l.includes('Ready to accept connections'), 10_000);
  };
  await start();
  const stats = () => {
    const out = execFileSync('redis-cli', ['-s', socket, 'INFO', 'commandstats'], { encoding: 'utf8' });
    const calls: Record<string, number> = {};
    for (const m of out.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) calls[m[1]!] = Number(m[2]);
    return calls;
  };
  return {
    config: { store: 'redis', redisUrl: `unix://${socket}` },
    env: {},
    stop: async () => {
      await proc?.stop(1000);
      await sleep(100);
    },
    start,
    load: async () => {
      const minutes = (performance.now() - startedAt) / 60_000;
      const calls = stats();
      return Object.entries(calls).sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${(n / minutes).toFixed(0)}/min`).join(', ') + ' (since the last restart of redis)';
    },
    close: async () => {
      await proc?.stop(1000);
    },
  };
}
