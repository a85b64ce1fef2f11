/**
 * End-to-end check of the metrics and alert contract against a real Prometheus (Debian's
 * `prometheus` and `promtool`), with the built CLI as users run it:
 *
 * 1. `node dist/cli.js simulate` (the simulated service) and `node dist/cli.js run` (a sidecar in
 *    front of it, admin listener on a free loopback port, read back from its start log line);
 * 2. `promtool check metrics` on a real /metrics scrape;
 * 3. two Prometheus servers scraping the sidecar every second, each under its own job name
 *    (`b2b-sidecar`, and `kubernetes-pods` as the community Helm chart's annotation-based job is
 *    called), with deploy/prometheus/alerts.yaml loaded: every rule healthy, token valid, no
 *    alert active (issue 13: under `kubernetes-pods` alone, B2BSidecarDown used to fire for ever);
 * 4. the service's own 502s passed through: B2BSidecarLocalErrors stays inactive;
 * 5. the service stopped, so the sidecar itself answers 502: B2BSidecarLocalErrors fires in both;
 * 6. the sidecar stopped: B2BSidecarDown becomes active in both.
 *
 * Usage: node --import tsx scripts/prometheus-e2e.ts   (after npm run build; run by `npm run test:rules`)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(import.meta.url), '../..');
const STEP_TIMEOUT_MS = 30_000;
/** B2BSidecarLocalErrors has `for: 1m`, plus a few scrapes before its expression holds. */
const FIRING_TIMEOUT_MS = 150_000;
const JOBS = ['b2b-sidecar', 'kubernetes-pods'] as const;
const CREDENTIALS = { apiKey: 'e2e-api-key', password: 'e2e-password', rkObjectId: 'demo-object' };

interface Proc { name: string; child: ChildProcess; output: () => string }
/** One Prometheus server and the only job name it scrapes the sidecar under. */
interface Prom { job: string; base: string; proc: Proc }
interface Rule { name: string; type: string; health: string; state: string; lastError?: string; alerts?: Array<{ labels: Record<string, string>; state: string }> }

function start(name: string, cmd: string[], cwd: string): Proc {
  const child = spawn(cmd[0]!, cmd.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => { output = (output + chunk.toString()).slice(-50_000); };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('error', (err) => { output += `\n[${name}] failed to start: ${err.message}`; });
  return { name, child, output: () => output };
}

async function stop({ child }: Proc): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Polls `check` until it returns a value, a watched process dies, or the step times out. */
async function waitFor<T>(what: string, procs: Proc[], check: () => Promise<T | undefined>, timeoutMs = STEP_TIMEOUT_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  let dead: Proc | undefined;
  while (Date.now() < deadline) {
    dead = procs.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
    if (dead) break;
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  const why = dead ? `${dead.name} exited (${dead.child.exitCode ?? dead.child.signalCode})` : 'timed out';
  const output = procs.map((p) => `--- ${p.name} output ---\n${p.output().slice(-5_000)}`).join('\n');
  throw new Error(`${why} waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}\n${output}`);
}

/** A free loopback port for Prometheus, which cannot listen on port 0 and report it back. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

async function api(base: string, path: string): Promise<any> {
  const res = await fetch(`${base}${path}`, { signal: AbortSignal.timeout(2_000) });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.json();
}

async function query(base: string, promql: string): Promise<Array<{ metric: Record<string, string>; value: [number, string] }>> {
  const body = await api(base, `/api/v1/query?query=${encodeURIComponent(promql)}`);
  return body.data.result;
}

async function rules(base: string): Promise<Rule[]> {
  return (await api(base, '/api/v1/rules')).data.groups.flatMap((g: { rules: Rule[] }) => g.rules);
}

/** Whether `alert` has an alert in one of `states` for the sidecar's target under the server's job. */
async function isActive(prom: Prom, alert: string, states: string[]): Promise<boolean> {
  const rule = (await rules(prom.base)).find((r) => r.name === alert);
  if (!rule) throw new Error(`${alert} is not loaded`);
  return (rule.alerts ?? []).some((a) => states.includes(a.state) && a.labels.job === prom.job);
}

/** True when `check` holds on every Prometheus server. */
async function everywhere(proms: Prom[], check: (prom: Prom) => Promise<boolean>): Promise<true | undefined> {
  const results = await Promise.all(proms.map(check));
  return results.every(Boolean) ? true : undefined;
}

/** `promtool check metrics` on one real scrape: Prometheus naming rules (e.g. only counters end in _total). */
async function promtoolCheckMetrics(adminOrigin: string): Promise<void> {
  const text = await (await fetch(`${adminOrigin}/metrics`)).text();
  const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c));
  child.stderr.on('data', (c: Buffer) => (out += c));
  const code = await new Promise<number | null>((done) => {
    child.on('close', done);
    child.stdin.end(text);
  });
  if (code !== 0 || out.trim() !== '') throw new Error(`promtool check metrics failed (exit ${code}):\n${out}`);
}

/** Sends GETs through the sidecar until stopped; resolves with the status counts. */
function traffic(url: string, everyMs: number): { stop: () => Promise<Map<number, number>> } {
  const counts = new Map<number, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
        await res.arrayBuffer();
        counts.set(res.status, (counts.get(res.status) ?? 0) + 1);
      } catch {
        counts.set(0, (counts.get(0) ?? 0) + 1);
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  })();
  return { stop: async () => { running = false; await loop; return counts; } };
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'b2b-prom-e2e-'));
  const procs: Proc[] = [];
  const cli = (name: string, args: string[]) => {
    const proc = start(name, ['node', 'dist/cli.js', ...args], ROOT);
    procs.push(proc);
    return proc;
  };
  try {
    const caFile = join(dir, 'ca.pem');
    const simulator = cli('simulator', ['simulate', '--port', '0', '--ca-out', caFile,
      '--api-key', CREDENTIALS.apiKey, '--password', CREDENTIALS.password]);
    const serviceUrl = await waitFor('the simulator URL', [simulator], async () => /listening on (https:\/\/\S+)/.exec(simulator.output())?.[1]);

    const sidecarConfig = {
      listen: { host: '127.0.0.1', port: 0 },
      admin: { host: '127.0.0.1', port: 0 },
      service: { baseUrl: serviceUrl, caFile },
      credentials: CREDENTIALS,
    };
    // JSON is valid YAML, so no YAML writer is needed here or for Prometheus's config.
    await writeFile(join(dir, 'sidecar.yaml'), JSON.stringify(sidecarConfig), { mode: 0o600 });
    const sidecar = cli('sidecar', ['run', '--config', join(dir, 'sidecar.yaml')]);
    const started = await waitFor('the sidecar start log line', [sidecar], async () => {
      const line = sidecar.output().split('\n').find((l) => l.includes('"sidecar started"'));
      return line ? (JSON.parse(line) as { listen: string; admin: string }) : undefined;
    });
    const adminOrigin = `http://${started.admin}`;
    const proxyOrigin = `http://${started.listen}`;
    console.log(`prometheus-e2e: sidecar proxy ${proxyOrigin}, admin ${adminOrigin}, service ${serviceUrl}`);

    await promtoolCheckMetrics(adminOrigin);
    console.log('prometheus-e2e: promtool check metrics: a real /metrics scrape passes');

    const proms: Prom[] = [];
    for (const job of JOBS) {
      const port = await freePort();
      const config = {
        global: { scrape_interval: '1s', evaluation_interval: '1s' },
        rule_files: [join(ROOT, 'deploy/prometheus/alerts.yaml')],
        scrape_configs: [{ job_name: job, metrics_path: '/metrics', static_configs: [{ targets: [started.admin] }] }],
      };
      const home = join(dir, job);
      await mkdir(home);
      await writeFile(join(home, 'prometheus.yml'), JSON.stringify(config, null, 2));
      const proc = start(`prometheus (job ${job})`, [
        'prometheus', `--config.file=${join(home, 'prometheus.yml')}`, `--storage.tsdb.path=${join(home, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
      ], home);
      procs.push(proc);
      proms.push({ job, base: `http://127.0.0.1:${port}`, proc });
    }
    const servers = proms.map((p) => p.proc);
    const all = [simulator, sidecar, ...servers];

    await waitFor('Prometheus to be ready', all, () => everywhere(proms, async (p) => (await fetch(`${p.base}/-/ready`)).ok));
    await waitFor('b2b_sidecar_token_valid == 1', all, () => everywhere(proms, async (p) =>
      (await query(p.base, 'b2b_sidecar_token_valid == 1')).some((r) => r.metric.job === p.job)));

    // The first evaluations may run before the first scrape (absent() is briefly true), so wait
    // for a settled state instead of sampling once.
    let ruleCount = 0;
    await waitFor('every rule healthy and no alert active', all, () => everywhere(proms, async (p) => {
      const list = await rules(p.base);
      const bad = list.find((r) => r.health !== 'ok');
      if (bad) throw new Error(`job ${p.job}: rule ${bad.name} health ${bad.health} ${bad.lastError ?? ''}`);
      const active = list.filter((r) => r.type === 'alerting' && r.state !== 'inactive');
      if (active.length > 0) throw new Error(`job ${p.job}: active: ${active.map((r) => `${r.name} (${r.state})`).join(', ')}`);
      ruleCount = list.length;
      return (await query(p.base, 'b2b_sidecar:scrape_target')).some((r) => r.metric.job === p.job);
    }));
    // Settled once is not enough for `for: 1m` rules: stay quiet for a while longer.
    await new Promise((r) => setTimeout(r, 5_000));
    await waitFor('no alert active 5 s later', all, () => everywhere(proms, async (p) => {
      const active = (await rules(p.base)).filter((r) => r.type === 'alerting' && r.state !== 'inactive');
      if (active.length > 0) throw new Error(`job ${p.job}: active: ${active.map((r) => `${r.name} (${r.state})`).join(', ')}`);
      return true;
    }), 2_000);
    console.log(`prometheus-e2e: healthy sidecar, scraped as job ${JOBS.join(' and as job ')}: ${ruleCount} rules healthy, no alert active`);

    // The service's own 502s, passed through: counted in requests_total, not as the sidecar's.
    const upstream502 = traffic(`${proxyOrigin}/pub/b2b/v1/status/502`, 20);
    await new Promise((r) => setTimeout(r, 3_000));
    const passed = await upstream502.stop();
    if ((passed.get(502) ?? 0) < 20 || passed.size !== 1) throw new Error(`expected only 502s from /status/502, got ${JSON.stringify([...passed])}`);
    await waitFor('the passed-through 502s in Prometheus', all, () => everywhere(proms, async (p) =>
      (await query(p.base, 'sum(b2b_sidecar_requests_total{code="502"})')).some((r) => Number(r.value[1]) >= passed.get(502)!)));
    await new Promise((r) => setTimeout(r, 3_000)); // a few evaluations
    for (const p of proms) {
      if (await isActive(p, 'B2BSidecarLocalErrors', ['pending', 'firing'])) throw new Error(`job ${p.job}: B2BSidecarLocalErrors is active on the service's own 502s`);
    }
    console.log(`prometheus-e2e: ${passed.get(502)} 502s from the service passed through: B2BSidecarLocalErrors stays inactive under both job names`);

    // The service goes away; the sidecar (token still valid) answers 502 itself.
    await stop(simulator);
    const local = traffic(`${proxyOrigin}/pub/b2b/v1/objects/${CREDENTIALS.rkObjectId}`, 50);
    try {
      await waitFor('B2BSidecarLocalErrors firing', [sidecar, ...servers],
        () => everywhere(proms, (p) => isActive(p, 'B2BSidecarLocalErrors', ['firing'])), FIRING_TIMEOUT_MS);
    } finally {
      const counts = await local.stop();
      console.log(`prometheus-e2e: service stopped, the sidecar answered ${JSON.stringify(Object.fromEntries(counts))}: B2BSidecarLocalErrors firing under both job names`);
    }
    for (const p of proms) {
      if (await isActive(p, 'B2BSidecarNoValidToken', ['pending', 'firing'])) throw new Error(`job ${p.job}: B2BSidecarNoValidToken is active although the token is still valid`);
    }

    // The sidecar goes away: B2BSidecarDown under both job names (pending: its `for` is 1m;
    // promtool's unit tests cover the firing time).
    await stop(sidecar);
    await waitFor('B2BSidecarDown active', servers, () => everywhere(proms, (p) => isActive(p, 'B2BSidecarDown', ['pending', 'firing'])));
    console.log('prometheus-e2e: sidecar stopped: B2BSidecarDown active under both job names');
    console.log('prometheus-e2e: ok');
  } finally {
    await Promise.all(procs.reverse().map(stop));
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`prometheus-e2e: FAILED: ${err instanceof Error ? err.message : String(err)}`);
  // exitCode, not exit(): let stderr drain before the process ends.
  process.exitCode = 1;
});
