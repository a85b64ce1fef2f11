import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { startKubernetesApi } from '../../test/helpers/kubernetes-api.js';
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

export async function fleetStoreFixture(kind: 'redis' | 'sqlite' | 'kubernetes', work: string): Promise<StoreFixture> {
  if (kind === 'sqlite') {
    return { config: { store: 'sqlite', sqlitePath: join(work, 'fleet.db') }, env: {}, close: async () => undefined };
  }
  if (kind === 'redis') return redisFixture(work);
  return kubernetesFixture(work);
}

/**
 * The test API server of the tests (test/helpers/kubernetes-api.ts, its behaviours drawn from the
 * Kubernetes API reference), behind a TCP relay on a fixed port that the outage closes: the
 * replicas find it as in a pod (service host and port, a service-account folder).
 */
async function kubernetesFixture(work: string): Promise<StoreFixture> {
  // The test API server serves with the tests' own CA (test/helpers/tls.ts); trust that one.
  const { testTls } = await import('../../test/helpers/tls.js');
  const api = await startKubernetesApi();
  const target = new URL(api.url);
  const relay = await tcpRelay(Number(target.port));
  const account = join(work, 'serviceaccount');
  mkdirSync(account);
  writeFileSync(join(account, 'token'), api.token);
  writeFileSync(join(account, 'ca.crt'), (await testTls()).caPem);
  writeFileSync(join(account, 'namespace'), api.namespace);
  const startedAt = performance.now();
  return {
    config: { store: 'kubernetes', kubernetesSecret: api.secretName, kubernetesServiceAccountDir: account },
    env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String(relay.port) },
    stop: () => relay.stop(),
    start: () => relay.start(),
    load: async () => {
      const minutes = (performance.now() - startedAt) / 60_000;
      const byVerb: Record<string, number> = {};
      for (const r of api.requests) byVerb[r.verb] = (byVerb[r.verb] ?? 0) + 1;
      return Object.entries(byVerb).sort((a, b) => b[1] - a[1]).map(([v, n]) => `${v} ${(n / minutes).toFixed(0)}/min`).join(', ') + ' (API requests by verb, the whole fleet)';
    },
    close: async () => {
      await relay.stop();
      await api.close();
    },
  };
}

/** A TCP relay on one port to `targetPort`, which can be closed (connections cut) and opened again on the same port. */
async function tcpRelay(targetPort: number): Promise<{ port: number; stop(): Promise<void>; start(): Promise<void> }> {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  let port = 0;
  const start = () => new Promise<void>((resolve, reject) => {
    server = createServer((client) => {
      const upstream = connect(targetPort, '127.0.0.1');
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s)).on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      port = (server!.address() as { port: number }).port;
      resolve();
    });
  });
  await start();
  return {
    get port() {
      return port;
    },
    stop: async () => {
      const closing = new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
      for (const s of sockets) s.destroy();
      await closing;
    },
    start,
  };
}

/** A real redis-server (Debian's package) on a unix socket in `work`; persistence off. */
async function redisFixture(work: string): Promise<StoreFixture> {
  const socket = join(work, 'redis.sock');
  let proc: Managed | undefined;
  const startedAt = performance.now();
  const start = async () => {
    proc = spawnManaged('redis', 'redis-server', ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--save', '', '--appendonly', 'no'], { cwd: work });
    await proc.waitForLine((l) => l.includes('ready to accept connections'), 10_000);
  };
  await start();
  const stats = () => {
    const out = execFileSync('redis-cli', ['-s', socket, 'INFO', 'commandstats'], { encoding: 'utf8' });
    const calls: Record<string, number> = {};
    for (const m of out.matchAll(/cmdstat_(\w+):calls=(\d+)/g)) calls[m[1]!] = Number(m[2]);
    return calls;
  };
  /** Counts of the servers before a restart: a restarted redis-server starts its counters at 0. */
  const earlier: Record<string, number> = {};
  return {
    config: { store: 'redis', redisUrl: `unix://${socket}` },
    env: {},
    stop: async () => {
      for (const [c, n] of Object.entries(stats())) earlier[c] = (earlier[c] ?? 0) + n;
      await proc?.stop(1000);
      await sleep(100);
    },
    start,
    load: async () => {
      const minutes = (performance.now() - startedAt) / 60_000;
      const calls: Record<string, number> = { ...earlier };
      for (const [c, n] of Object.entries(stats())) calls[c] = (calls[c] ?? 0) + n;
      return Object.entries(calls).sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${(n / minutes).toFixed(0)}/min`).join(', ') + ' (commands, the whole fleet, the harness\'s own few included)';
    },
    close: async () => {
      await proc?.stop(1000);
    },
  };
}
