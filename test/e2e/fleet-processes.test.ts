import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { SidecarStatus } from '../../src/observability/status.js';
import { assertBuildIsCurrent, spawnCli, type Spawned } from '../helpers/cli.js';
import { CREDENTIALS, send } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startOneTokenVendor } from '../helpers/vendors.js';
import { startRedis } from '../helpers/redis-server.js';
import { startKubernetesApi } from '../helpers/kubernetes-api.js';

/**
 * Several real `run` processes on one host sharing one SQLite file (fleet.store: sqlite), or one
 * real redis-server (fleet.store: redis, through the separately bundled client), against a
 * vendor that keeps one live token per key (a new gentoken revokes the previous one), with 4 s
 * tokens and steady traffic on each: about one gentoken call per renewal interval for the whole
 * fleet, and no failed request. Without the store each process renews alone and revokes the
 * others' tokens (docs/fleet.md).
 */
const PROBE = '/pub/b2b/v1/objects/obj-42';
const PROCESSES = 3;
const LIFETIME_SECONDS = 4;
const RENEW_AT = 0.5;
const RUN_MS = 12_000;

/**
 * The `fleet` section of each process and its environment, on a store started for the test; for
 * Kubernetes, the test API server (test/helpers/kubernetes-api.ts) found as in a pod: the service
 * host and port in the environment, the token, CA and namespace in a service-account folder.
 */
async function storeFor(kind: 'sqlite' | 'redis' | 'kubernetes', dir: string, t: { after(fn: () => unknown): void }): Promise<{ fleet: Record<string, unknown>; env: Record<string, string> }> {
  if (kind === 'sqlite') return { fleet: { store: 'sqlite', sqlitePath: join(dir, 'fleet.db') }, env: {} };
  if (kind === 'redis') {
    const redis = await startRedis();
    t.after(() => redis.close());
    return { fleet: { store: 'redis', redisUrl: redis.url }, env: {} };
  }
  const api = await startKubernetesApi();
  t.after(() => api.close());
  const account = join(dir, 'serviceaccount');
  mkdirSync(account);
  writeFileSync(join(account, 'token'), api.token);
  writeFileSync(join(account, 'ca.crt'), (await testTls()).caPem);
  writeFileSync(join(account, 'namespace'), api.namespace);
  const { hostname, port } = new URL(api.url);
  return {
    fleet: { store: 'kubernetes', kubernetesSecret: api.secretName, kubernetesServiceAccountDir: account },
    env: { KUBERNETES_SERVICE_HOST: hostname, KUBERNETES_SERVICE_PORT: port },
  };
}

for (const kind of ['sqlite', 'redis', 'kubernetes'] as const) describe(`a fleet of processes on one ${kind} store (whole processes)`, () => {
  it('makes about one gentoken call per renewal interval and fails no request against a one-live-token vendor', async (t) => {
    assertBuildIsCurrent();
    const tls = await testTls();
    const vendor = await startOneTokenVendor(PROBE);
    t.after(() => vendor.close());
    const dir = mkdtempSync(join(tmpdir(), 'b2b-fleet-e2e-'));
    const { fleet, env } = await storeFor(kind, dir, t);
    const sidecars: Array<{ proc: Spawned; port: number; adminPort: number }> = [];
    t.after(async () => {
      for (const s of sidecars) s.proc.child.kill('SIGTERM');
      await Promise.all(sidecars.map((s) => s.proc.exited));
    });
    for (let i = 0; i < PROCESSES; i++) {
      const config = join(dir, `sidecar-${i}.yaml`);
      writeFileSync(config, stringify({
        listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 },
        service: { baseUrl: vendor.url, caFile: tls.caFile }, credentials: CREDENTIALS,
        token: { maxLifetimeSeconds: LIFETIME_SECONDS, renewAt: RENEW_AT, maxGentokenPerMinute: 600 },
        fleet: { ...fleet, pollIntervalSeconds: 0.5 },
      }));
      const proc = spawnCli(['run', '--config', config], env);
      const [, listen, admin] = await proc.waitFor(/"listen":"127\.0\.0\.1:(\d+)","admin":"127\.0\.0\.1:(\d+)"/);
      sidecars.push({ proc, port: Number(listen), adminPort: Number(admin) });
    }
    // Every process serves before the measured window.
    for (const s of sidecars) {
      const deadline = Date.now() + 15_000;
      while ((await send(s.port, { path: PROBE })).status !== 200) {
        assert.ok(Date.now() < deadline, 'a sidecar never served');
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const before = vendor.tokens.length;
    const started = Date.now();
    const failures: number[] = [];
    let sent = 0;
    await Promise.all(sidecars.map(async (s) => {
      while (Date.now() - started < RUN_MS) {
        const answer = await send(s.port, { path: PROBE });
        sent++;
        if (answer.status !== 200) failures.push(answer.status);
        await new Promise((r) => setTimeout(r, 20));
      }
    }));
    const elapsedS = (Date.now() - started) / 1000;
    const calls = vendor.tokens.length - before;
    // One process alone renews every LIFETIME * RENEW_AT (2 s), a little earlier with jitter.
    const alone = elapsedS / (LIFETIME_SECONDS * RENEW_AT);
    assert.deepEqual(failures, [], `${failures.length} of ${sent} requests failed`);
    assert.ok(calls <= alone * 1.25 + 2, `${calls} gentoken calls in ${elapsedS.toFixed(1)} s for ${PROCESSES} processes; one process alone makes ${alone.toFixed(1)}`);
    assert.ok(sent > PROCESSES * 20, `only ${sent} requests were sent`);
    // Each status shows the store and the shared record; no token in it.
    for (const s of sidecars) {
      const answer = await send(s.adminPort, { path: '/status' });
      const shared = (JSON.parse(answer.body.toString()) as SidecarStatus).token?.fleet;
      assert.equal(shared?.store, kind);
      assert.equal(shared?.state, 'up');
      assert.equal(shared?.source, 'shared');
      assert.ok((shared?.version ?? 0) >= 1);
      for (const token of vendor.tokens) assert.ok(!answer.body.toString().includes(token));
    }
  });
});
