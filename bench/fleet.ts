/**
 * A fleet on one key (docs/fleet.md): `--replicas` sidecar processes from dist/ (default 8), each
 * with its own listener and its own steady load, sharing one token through `--store` (redis: a
 * real redis-server on a unix socket; sqlite: one file; kubernetes: the test API server of
 * test/helpers/kubernetes-api.ts), against the simulator keeping ONE live token per key (a new
 * gentoken revokes the earlier one) with `--ttl`-second tokens (default 4), for `--seconds`
 * (default 180). Events, each in its own window of the run:
 *
 * 1. the replica whose gentoken call is on the wire (its claim held) is killed with SIGKILL, and
 *    started again 5 s later;
 * 2. the next one is stopped with SIGSTOP during its claim for 10 s, then SIGCONT;
 * 3. the store is stopped for 10 s and started again (redis, kubernetes).
 *
 * Counted: client requests that failed (any answer but 200, or none) in each window; gentoken
 * calls against what one process alone makes for that lifetime (seconds ÷ (renewAt × ttl)); the
 * store's reads, writes and change events per minute (from the run's own counters where the
 * engine has them), scaled to a fleet of 1,000; and when the fleet was back on one token after
 * the store returned.
 *
 *   npm run build && node --import tsx bench/fleet.ts [--store redis|sqlite|kubernetes] [--replicas 8] [--ttl 4] [--seconds 180] [--rps 10]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { createB2bSimulator } from '../src/simulator/b2b-simulator.js';
import { generateTlsMaterial } from '../src/simulator/certs.js';
import { API_KEY, deployedNodeOptions, freePort, PASSWORD, proxyEnv, ROOT, setDistDir, sidecarCli, sleep } from './lib/setup.js';
import { spawnManaged, stopAll, type Managed } from './lib/spawn.js';
import { fleetStoreFixture, type StoreFixture } from './lib/fleet-stores.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
const STORE = arg('--store', 'redis') as 'redis' | 'sqlite' | 'kubernetes';
const REPLICAS = Number(arg('--replicas', '8'));
const TTL = Number(arg('--ttl', '4'));
const SECONDS = Number(arg('--seconds', '180'));
const RPS = Number(arg('--rps', '10'));
const RENEW_AT = Number(arg('--renew-at', '0.5'));
setDistDir(arg('--dist', join(ROOT, 'dist')));

interface Replica {
  index: number;
  proc: Managed;
  port: number;
  adminPort: number;
  config: string;
}

interface Outcome {
  at: number;
  ok: boolean;
  status: number;
  replica: number;
  /** Sent to a replica while it was stopped (SIGSTOP): its own client's loss, not the fleet's. */
  frozen?: boolean;
  /** A failure's message, as the client got it. */
  message?: string;
}

function get(port: number, path: string, agent: Agent | false): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path, agent, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/** The pid of the process whose TCP connection has local port `port` on this host (`ss`, iproute2). */
function pidOfPort(port: number): number | undefined {
  const out = execFileSync('ss', ['-tnpH', `sport = :${port}`], { encoding: 'utf8' });
  const m = /pid=(\d+)/.exec(out);
  return m ? Number(m[1]) : undefined;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'b2b-fleet-bench-'));
  const tls = await generateTlsMaterial(['localhost', '127.0.0.1']);
  const caFile = join(work, 'ca.pem');
  writeFileSync(caFile, tls.caPem);
  const sim = createB2bSimulator({ apiKey: API_KEY, password: PASSWORD, ttlSeconds: TTL, tls, oneLiveTokenPerKey: true });
  const { url } = await sim.start();
  const store: StoreFixture = await fleetStoreFixture(STORE, work);
  const replicas: Replica[] = [];
  const outcomes: Outcome[] = [];
  const events: Array<{ at: number; what: string }> = [];
  let running = true;
  let frozenReplica: number | undefined;

  const startReplica = async (index: number, ports?: { port: number; adminPort: number }): Promise<Replica> => {
    const port = ports?.port ?? await freePort();
    const adminPort = ports?.adminPort ?? await freePort();
    const config = join(work, `replica-${index}.yaml`);
    writeFileSync(config, stringify({
      listen: { host: '127.0.0.1', port }, admin: { host: '127.0.0.1', port: adminPort },
      // A gentoken deadline that fits 4 s tokens: the claim's lifetime follows it (docs/fleet.md).
      service: { baseUrl: url, caFile, tokenTimeoutMs: 1000 },
      credentials: { apiKey: API_KEY, password: PASSWORD },
      // 4 s tokens renew 30 times a minute: the default budget (12 a minute, for 15-minute tokens) would hold back the 401s' calls.
      token: { renewAt: RENEW_AT, maxGentokenPerMinute: 120 },
      fleet: store.config,
      log: { level: 'warn' },
    }), { mode: 0o600 });
    const proc = spawnManaged(`replica-${index}`, process.execPath, [sidecarCli(), 'run', '--config', config], {
      env: proxyEnv({ NODE_OPTIONS: deployedNodeOptions(), ...store.env }),
    });
    for (let i = 0; ; i++) {
      if ((await get(adminPort, '/readyz', false)).status === 200) break;
      if (i > 600) throw new Error(`replica ${index} not ready: ${proc.lines.slice(-5).join('\n')}`);
      await sleep(50);
    }
    const replica = { index, proc, port, adminPort, config };
    replicas[index] = replica;
    return replica;
  };

  /** Steady load on one replica: RPS requests a second, each answer recorded. */
  const load = async (index: number) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 4 });
    while (running) {
      const r = replicas[index];
      const t = performance.now();
      if (r && !r.proc.child.killed && r.proc.child.exitCode === null) {
        const frozen = frozenReplica === index;
        const answer = await get(r.port, '/pub/b2b/v1/json1k', agent);
        // A replica that is itself killed is not a failure of the fleet; one stopped is counted apart.
        if (replicas[index] === r) outcomes.push({ at: t, ok: answer.status === 200, status: answer.status, replica: index, ...(frozen || frozenReplica === index ? { frozen: true } : {}), ...(answer.status === 200 ? {} : { message: answer.body.slice(0, 160) }) });
      }
      await sleep(Math.max(0, 1000 / RPS - (performance.now() - t)));
    }
    agent.destroy();
  };

  /** Holds the next gentoken call on the wire for `ms` and answers the pid that made it. */
  const nextMinter = async (ms: number): Promise<number | undefined> => {
    const seen = sim.tokenRequestTimes.length;
    sim.faults.setLatency(ms, 'token');
    for (let i = 0; i < 400 && sim.tokenRequestTimes.length === seen; i++) await sleep(10);
    const port = sim.stats.lastTokenRequest?.remotePort;
    const pid = port ? pidOfPort(port) : undefined;
    return pid;
  };

  try {
    await Promise.all(Array.from({ length: REPLICAS }, (_, i) => startReplica(i)));
    sim.stats.reset();
    const tokenTimesFrom = sim.tokenRequestTimes.length;
    const t0 = performance.now();
    const loads = Array.from({ length: REPLICAS }, (_, i) => load(i));
    const at = (fraction: number) => sleep(Math.max(0, t0 + fraction * SECONDS * 1000 - performance.now()));

    // 1. SIGKILL the claim holder during its gentoken call.
    await at(0.25);
    const killedPid = await nextMinter(400);
    const killed = replicas.find((r) => r.proc.pid === killedPid);
    events.push({ at: performance.now() - t0, what: `SIGKILL replica ${killed?.index ?? `pid ${killedPid}`} (its gentoken on the wire, its claim held)` });
    if (killed) {
      const ports = { port: killed.port, adminPort: killed.adminPort };
      replicas[killed.index] = undefined as unknown as Replica;
      process.kill(killed.proc.pid, 'SIGKILL');
      sim.faults.setLatency(0, 'token');
      await sleep(5000);
      await startReplica(killed.index, ports);
      events.push({ at: performance.now() - t0, what: `replica ${killed.index} started again` });
    }
    sim.faults.setLatency(0, 'token');

    // 2. SIGSTOP the next claim holder for 10 s.
    await at(0.5);
    const stoppedPid = await nextMinter(400);
    const stopped = replicas.find((r) => r?.proc.pid === stoppedPid);
    events.push({ at: performance.now() - t0, what: `SIGSTOP replica ${stopped?.index ?? `pid ${stoppedPid}`} during its claim, 10 s` });
    if (stoppedPid) process.kill(stoppedPid, 'SIGSTOP');
    frozenReplica = stopped?.index;
    sim.faults.setLatency(0, 'token');
    await sleep(10_000);
    if (stoppedPid) process.kill(stoppedPid, 'SIGCONT');
    frozenReplica = undefined;
    events.push({ at: performance.now() - t0, what: 'SIGCONT' });

    // 3. The store down for 10 s.
    let backOnOne: number | undefined;
    if (store.stop) {
      await at(0.72);
      events.push({ at: performance.now() - t0, what: `${STORE} stopped for 10 s` });
      await store.stop();
      await sleep(10_000);
      await store.start!();
      const back = performance.now();
      events.push({ at: back - t0, what: `${STORE} started again` });
      // Back on one shared token: every replica's /status names the same fingerprint.
      for (let i = 0; i < 300; i++) {
        const prints = await Promise.all(replicas.map(async (r) => (JSON.parse((await get(r.adminPort, '/status', false)).body || '{}') as { token?: { fingerprint?: string } }).token?.fingerprint));
        if (prints.every((p) => p && p === prints[0])) {
          backOnOne = performance.now() - back;
          break;
        }
        await sleep(100);
      }
    }

    await at(1);
    running = false;
    await Promise.all(loads);
    const gentokenCalls = sim.tokenRequestTimes.length - tokenTimesFrom;
    const alone = SECONDS / (RENEW_AT * TTL);
    const frozen = outcomes.filter((o) => o.frozen);
    const counted = outcomes.filter((o) => !o.frozen);
    const failed = counted.filter((o) => !o.ok);
    const windows = [
      { name: 'steady (store up, no event)', from: 0, to: 0.25 },
      { name: 'SIGKILL of the claim holder', from: 0.25, to: 0.5 },
      { name: 'SIGSTOP of the claim holder', from: 0.5, to: 0.72 },
      { name: store.stop ? `${STORE} down 10 s and back` : 'the rest (no outage of this store)', from: 0.72, to: 1 },
    ].map((w) => {
      const inWindow = counted.filter((o) => o.at - t0 >= w.from * SECONDS * 1000 && o.at - t0 < w.to * SECONDS * 1000);
      const calls = sim.tokenRequestTimes.slice(tokenTimesFrom).filter((t) => t - t0 >= w.from * SECONDS * 1000 && t - t0 < w.to * SECONDS * 1000).length;
      const alone = ((w.to - w.from) * SECONDS) / (RENEW_AT * TTL);
      return `| ${w.name} | ${inWindow.length} | ${inWindow.filter((o) => !o.ok).length} | ${calls} (alone: ${alone.toFixed(1)}) |`;
    });
    const storeLoad = await store.load?.();
    const lines = [
      `# A fleet of ${REPLICAS} on one key, store ${STORE} (Node ${process.version}; ${TTL} s tokens, one live token per key; ${SECONDS} s; ${RPS} requests/s per replica)`,
      '',
      '| window | requests | failed | gentoken calls |',
      '|---|---:|---:|---:|',
      ...windows,
      '',
      `- failed requests: ${failed.length} of ${counted.length} (statuses: ${JSON.stringify(countBy(failed.map((f) => f.status)))}); sent to the stopped replica while it was stopped, apart: ${frozen.length}, ${frozen.filter((o) => !o.ok).length} failed`,
      `- gentoken calls: ${gentokenCalls}; one process alone: ${alone.toFixed(0)} (+3 allowed for the three events); ratio ${(gentokenCalls / alone).toFixed(2)}`,
      `- vendor: ${sim.stats.unauthorizedApiRequests} answers 401 (replayed by the sidecars), ${sim.stats.revokedTokenPresented} revoked tokens presented, ${sim.stats.expiredTokenPresented} expired`,
      backOnOne !== undefined ? `- back on one shared token ${(backOnOne / 1000).toFixed(1)} s after the store returned` : '- (no store outage in this run)',
      ...(storeLoad ? [`- store load per key: ${storeLoad}`] : []),
      'What failed requests were told (each message once, with its count):',
      ...Object.entries(countBy(failed.map((f) => `replica ${f.replica}: ${f.status} ${f.message ?? ''}`))).map(([m, n]) => `- ${n}× ${m}`),
      '',
      'Events:',
      ...events.map((e) => `- ${(e.at / 1000).toFixed(1)} s: ${e.what}`),
      '',
    ];
    process.stdout.write(lines.join('\n'));
    writeFileSync(join(ROOT, 'bench', 'results', `fleet-${STORE}-latest.md`), lines.join('\n'));
  } finally {
    running = false;
    await stopAll();
    await store.close();
    await sim.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

function countBy(values: ReadonlyArray<string | number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

await main();
