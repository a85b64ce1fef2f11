/**
 * End-to-end check of the metrics contract against a real Prometheus (Debian's `prometheus`):
 * starts the sidecar's demo (simulated service + sidecar on free loopback ports), reads the
 * admin URL it prints (a line `admin: http://127.0.0.1:PORT`), starts Prometheus scraping it
 * every second with deploy/prometheus/alerts.yaml loaded, and waits until the HTTP API reports
 * `b2b_sidecar_token_valid == 1`, `up == 1` and every alert rule evaluating without error.
 *
 * Usage: node --import tsx scripts/prometheus-e2e.ts [-- COMMAND ARGS...]
 * (default command: node dist/cli.js demo). Run by `npm run test:rules`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(fileURLToPath(import.meta.url), '../..');
const STEP_TIMEOUT_MS = 30_000;
const ADMIN_LINE = /\badmin:\s+(https?:\/\/\S+)/;
const JOB = 'b2b-sidecar';

interface Proc { child: ChildProcess; output: () => string }

function start(name: string, cmd: string[], cwd: string): Proc {
  const child = spawn(cmd[0]!, cmd.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => { output = (output + chunk.toString()).slice(-20_000); };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.on('error', (err) => { output += `\n[${name}] failed to start: ${err.message}`; });
  return { child, output: () => output };
}

async function stop({ child }: Proc): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Polls `check` until it returns a value, the process dies, or the step times out. */
async function waitFor<T>(what: string, proc: Proc, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  let lastError = '';
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null || proc.child.signalCode !== null) break;
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  const { exitCode, signalCode } = proc.child;
  const why = exitCode !== null || signalCode !== null ? `process exited (${exitCode ?? signalCode})` : 'timed out';
  throw new Error(`${why} waiting for ${what}${lastError ? ` (last error: ${lastError})` : ''}\n--- output ---\n${proc.output()}`);
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

async function main(): Promise<void> {
  const dash = process.argv.indexOf('--');
  const sidecarCmd = dash >= 0 ? process.argv.slice(dash + 1) : ['node', 'dist/cli.js', 'demo'];
  const dir = await mkdtemp(join(tmpdir(), 'b2b-prom-e2e-'));
  const procs: Proc[] = [];
  try {
    const sidecar = start('sidecar', sidecarCmd, ROOT);
    procs.push(sidecar);
    const adminUrl = new URL(await waitFor('the admin URL line', sidecar, async () => ADMIN_LINE.exec(sidecar.output())?.[1]));
    console.log(`prometheus-e2e: sidecar admin listener at ${adminUrl.origin}`);

    const port = await freePort();
    const config = {
      global: { scrape_interval: '1s', evaluation_interval: '1s' },
      rule_files: [join(ROOT, 'deploy/prometheus/alerts.yaml')],
      scrape_configs: [{
        job_name: JOB, scheme: adminUrl.protocol.slice(0, -1), metrics_path: '/metrics',
        static_configs: [{ targets: [adminUrl.host] }],
      }],
    };
    // JSON is valid YAML, so no YAML writer is needed for Prometheus's config.
    await writeFile(join(dir, 'prometheus.yml'), JSON.stringify(config, null, 2));
    const prometheus = start('prometheus', [
      'prometheus', `--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn',
    ], dir);
    procs.push(prometheus);
    const base = `http://127.0.0.1:${port}`;

    await waitFor('Prometheus to be ready', prometheus, async () => ((await fetch(`${base}/-/ready`)).ok ? true : undefined));
    const valid = await waitFor('b2b_sidecar_token_valid == 1', prometheus, async () =>
      (await query(base, 'b2b_sidecar_token_valid')).find((r) => r.metric.job === JOB && r.value[1] === '1'));
    console.log(`prometheus-e2e: b2b_sidecar_token_valid{instance="${valid.metric.instance}"} = 1`);
    await waitFor('up == 1', prometheus, async () =>
      (await query(base, `up{job="${JOB}"}`)).find((r) => r.value[1] === '1'));

    // The first evaluations may run before the first scrape (absent(up) is briefly true), so
    // wait for a settled state instead of sampling once.
    const rules = await waitFor('the alert rules to evaluate cleanly', prometheus, async () => {
      const all = (await api(base, '/api/v1/rules')).data.groups.flatMap((g: { rules: unknown[] }) => g.rules) as
        Array<{ name: string; health: string; state: string; lastError?: string }>;
      const bad = all.find((r) => r.health !== 'ok');
      if (bad) throw new Error(`rule ${bad.name} health ${bad.health} ${bad.lastError ?? ''}`);
      for (const name of ['B2BSidecarNoValidToken', 'B2BSidecarDown']) {
        const rule = all.find((r) => r.name === name);
        if (rule?.state !== 'inactive') throw new Error(`${name} is ${rule?.state ?? 'not loaded'}, expected inactive`);
      }
      return all;
    });
    console.log(`prometheus-e2e: ok (${rules.length} alert rules evaluate cleanly against the live sidecar)`);
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
