import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpRequest, Agent as HttpAgent } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, createServer, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { stringify } from 'yaml';
import { generateTlsMaterial } from '../../src/simulator/certs.js';
import { childPids, hasCommand } from './proc.js';
import { LOAD_CPU, PROXY_CPU, spawnManaged, type Managed } from './spawn.js';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const API_KEY = 'bench-api-key';
export const PASSWORD = 'bench-password';
export const NGINX_BIN = ['/usr/sbin/nginx', 'nginx'].find((p) => (p.startsWith('/') ? existsSync(p) : hasCommand(p)));

let distDir = join(ROOT, 'dist');
/** Where the sidecar's compiled cli.js lives (default dist/; `--dist` points experiments elsewhere). */
export function setDistDir(dir: string): void {
  distDir = resolve(dir);
}
export function sidecarCli(): string {
  return join(distDir, 'cli.js');
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** A throw-away CA and server certificate for 127.0.0.1/localhost, written as ca.pem, cert.pem, key.pem. */
export async function prepareTls(dir: string): Promise<{ caFile: string; caPem: string }> {
  mkdirSync(dir, { recursive: true });
  const tls = await generateTlsMaterial(['localhost', '127.0.0.1', '::1']);
  writeFileSync(join(dir, 'ca.pem'), tls.caPem);
  writeFileSync(join(dir, 'cert.pem'), tls.certPem);
  writeFileSync(join(dir, 'key.pem'), tls.keyPem, { mode: 0o600 });
  return { caFile: join(dir, 'ca.pem'), caPem: tls.caPem };
}

export interface Upstream {
  proc: Managed;
  port: number;
  url: string;
  control: SimControl;
}

/** The simulator as the HTTPS upstream, in its own process on the load CPU. */
export async function startUpstream(dir: string, caPem: string, ttlSeconds: number): Promise<Upstream> {
  const proc = spawnManaged('upstream', process.execPath, ['--import', 'tsx', join(ROOT, 'bench', 'upstream.ts'), dir, String(ttlSeconds), API_KEY, PASSWORD], { cpu: LOAD_CPU, cwd: ROOT });
  const line = await proc.waitForLine((l) => l.includes('"upstream":"ready"'), 30_000);
  const port = (JSON.parse(line) as { port: number }).port;
  const url = `https://127.0.0.1:${port}`;
  return { proc, port, url, control: new SimControl(url, caPem) };
}

/** Client of the simulator's gentoken and control API (`/_simulator/...`). */
export class SimControl {
  constructor(readonly url: string, private readonly caPem: string) {}

  request(method: string, path: string, body?: object, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
    return new Promise((resolveP, reject) => {
      const data = body ? JSON.stringify(body) : undefined;
      const req = httpsRequest(new URL(path, this.url), {
        method, ca: this.caPem, agent: false, timeout: 10_000,
        headers: { ...headers, ...(data ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } : {}) },
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolveP({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timeout`)));
      req.on('error', reject);
      req.end(data);
    });
  }

  async stats(): Promise<Record<string, number>> {
    const r = await this.request('GET', '/_simulator/stats');
    return JSON.parse(r.body) as Record<string, number>;
  }

  async setTtl(seconds: number): Promise<void> {
    const r = await this.request('POST', '/_simulator/ttl', { seconds });
    if (r.status !== 200) throw new Error(`set ttl: ${r.status} ${r.body}`);
  }

  async revoke(): Promise<void> {
    const r = await this.request('POST', '/_simulator/revoke', {});
    if (r.status !== 200) throw new Error(`revoke: ${r.status} ${r.body}`);
  }

  /** A token from gentoken, for the baselines' static header (set a long TTL first). */
  async gentoken(): Promise<string> {
    const r = await this.request('POST', '/pub/b2b/v1/auth/gentoken', { password: PASSWORD }, { apikey: API_KEY });
    if (r.status !== 200) throw new Error(`gentoken: ${r.status} ${r.body}`);
    return (JSON.parse(r.body) as { token: string }).token;
  }
}

export interface ProxyProc {
  name: string;
  /** The processes whose CPU and memory count (nginx: master + workers). */
  pids: number[];
  port: number;
  procs: Managed[];
  stop(): Promise<void>;
}

export function freePort(): Promise<number> {
  return new Promise((resolveP, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolveP(port));
    });
  });
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((r) => {
      const s = connect(port, '127.0.0.1', () => { s.destroy(); r(true); });
      s.once('error', () => r(false));
    });
    if (ok) return;
    if (performance.now() > deadline) throw new Error(`nothing listens on 127.0.0.1:${port} after ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** nginx, 1 worker, header-injecting, upstream keepalive, TLS verified against the CA. */
export async function startNginx(dir: string, up: Upstream, caFile: string, token: string): Promise<ProxyProc> {
  if (!NGINX_BIN) throw new Error('nginx is not installed');
  const prefix = join(dir, 'nginx');
  mkdirSync(join(prefix, 'logs'), { recursive: true, mode: 0o777 });
  const port = await freePort();
  const conf = `
worker_processes 1;
daemon off;
master_process on;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'logs', 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${join(prefix, 'client_body')};
  proxy_temp_path ${join(prefix, 'proxy')};
  fastcgi_temp_path ${join(prefix, 'fastcgi')};
  uwsgi_temp_path ${join(prefix, 'uwsgi')};
  scgi_temp_path ${join(prefix, 'scgi')};
  keepalive_requests 1000000;
  upstream sim { server 127.0.0.1:${up.port}; keepalive 128; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass https://sim;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host 127.0.0.1:${up.port};
      proxy_set_header Authorization "Bearer ${token}";
      proxy_set_header ApiKey "${API_KEY}";
      proxy_ssl_trusted_certificate ${caFile};
      proxy_ssl_verify on;
      proxy_ssl_name localhost;
      proxy_ssl_server_name on;
      proxy_ssl_session_reuse on;
    }
  }
}
`;
  const confFile = join(prefix, 'nginx.conf');
  writeFileSync(confFile, conf);
  const proc = spawnManaged('nginx', NGINX_BIN, ['-p', prefix, '-e', join(prefix, 'logs', 'error.log'), '-c', confFile], { cpu: PROXY_CPU });
  await Promise.race([waitForPort(port, 10_000), proc.exited.then((c) => { throw new Error(`nginx exited (${String(c)}): ${proc.lines.join('\n')}`); })]);
  const workers = childPids(proc.pid);
  return { name: 'nginx', pids: [proc.pid, ...workers], port, procs: [proc], stop: () => proc.stop() };
}

/**
 * The environment Node proxies run in. NODE_EXTRA_CA_CERTS is dropped: a machine that points it at
 * the whole system bundle (this sandbox does) makes every Node process parse ~140 certificates
 * before V8 even starts (~80 ms on one core), while the proxies here get their CA explicitly.
 */
export function proxyEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.NODE_EXTRA_CA_CERTS;
  return env;
}

let nodeOptionsOverride: string | undefined;
/** Experiments: run the sidecar with these NODE_OPTIONS instead of the Dockerfile's (bench `--node-options`). */
export function setNodeOptions(options: string): void {
  nodeOptionsOverride = options;
}

/** NODE_OPTIONS of the container image's runtime stage (the Dockerfile), so the sidecar runs as deployed. */
export function deployedNodeOptions(): string {
  if (nodeOptionsOverride !== undefined) return nodeOptionsOverride;
  const line = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n').find((l) => l.startsWith('ENV NODE_OPTIONS='));
  return line ? line.slice('ENV NODE_OPTIONS='.length).trim().replace(/^"(.*)"$/, '$1') : '';
}

let nodeArgsOverride: string[] | undefined;
/** Experiments: start the sidecar (and the tuned floor) with these options on node's command line (bench `--node-args`). */
export function setNodeArgs(args: string): void {
  nodeArgsOverride = args.split(' ').filter(Boolean);
}

/**
 * The options on node's command line in the container image's ENTRYPOINT (between `node` and
 * the script), so the sidecar runs as deployed: V8 flags read at start go there, as NODE_OPTIONS
 * does not take them.
 */
export function deployedNodeArgs(): string[] {
  if (nodeArgsOverride !== undefined) return nodeArgsOverride;
  const line = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n').find((l) => l.startsWith('ENTRYPOINT '));
  if (!line) return [];
  const argv = JSON.parse(line.slice('ENTRYPOINT '.length)) as string[];
  const script = argv.findIndex((a) => a.endsWith('cli.js'));
  return script > 1 ? argv.slice(1, script) : [];
}

/**
 * A reference proxy with a static header and none of the sidecar's features, with Node's default
 * V8 settings unless `extraEnv` says otherwise (startTunedFloor): `bare-http-proxy.mjs`, the
 * engine alone, or `bare-undici.mjs`, the Node floor.
 */
export async function startBare(
  up: Upstream, caFile: string, token: string, script = 'bare-http-proxy.mjs', extraEnv: NodeJS.ProcessEnv = {},
): Promise<ProxyProc & { readyMs: number }> {
  const env = proxyEnv({ UPSTREAM: up.url, CA_FILE: caFile, TOKEN: token, API_KEY: API_KEY, ...extraEnv });
  const name = script.replace(/\.mjs$/, '');
  // The tuned floor (SIDECAR_DIST) runs with the sidecar's node options too; the bare references with Node's defaults.
  const args = extraEnv.SIDECAR_DIST ? deployedNodeArgs() : [];
  const proc = spawnManaged(name, process.execPath, [...args, join(ROOT, 'bench', script)], { cpu: PROXY_CPU, env, cwd: ROOT });
  const line = await proc.waitForLine((l) => l.includes('"proxy":"ready"'), 15_000);
  return {
    name, pids: [proc.pid], port: (JSON.parse(line) as { port: number }).port, procs: [proc], stop: () => proc.stop(),
    readyMs: performance.now() - proc.spawnedAt,
  };
}

/**
 * The Node floor with the sidecar's process settings: bare-undici.mjs with the trust store built
 * by the sidecar's shared/tls.js and its V8 tuning (reference-env.mjs, SIDECAR_DIST). What any
 * proxy doing this job in Node pays in memory and start-up, without the sidecar's features.
 */
export function startTunedFloor(up: Upstream, caFile: string, token: string): Promise<ProxyProc & { readyMs: number }> {
  return startBare(up, caFile, token, 'bare-undici.mjs', { SIDECAR_DIST: distDir, NODE_OPTIONS: deployedNodeOptions() });
}

/**
 * The runtime alone: bare-http-server.mjs (node:http answering 1 KiB itself, no TLS, no undici) with
 * the sidecar's node options and command line. An idle row next to the sidecar's, so that a report
 * separates what the runtime costs from what the sidecar adds to it (bench/HISTORY.md, Node 24).
 */
export async function startNodeAlone(): Promise<ProxyProc> {
  const env = proxyEnv({ NODE_OPTIONS: deployedNodeOptions() });
  const proc = spawnManaged('node-alone', process.execPath, [...deployedNodeArgs(), join(ROOT, 'bench', 'bare-http-server.mjs')], { cpu: PROXY_CPU, env, cwd: ROOT });
  const line = await proc.waitForLine((l) => l.includes('"server":"ready"'), 15_000);
  return { name: 'node-alone', pids: [proc.pid], port: (JSON.parse(line) as { port: number }).port, procs: [proc], stop: () => proc.stop() };
}

export interface SidecarProc extends ProxyProc {
  adminPort: number;
  /** Spawn to first /readyz 200, ms. */
  readyMs: number;
  /** latencyMs of the first 'token obtained' log line, when logged. */
  tokenRttMs: number | undefined;
}

export type Engine = 'undici' | 'http-proxy';

/**
 * b2b-sidecar from dist/ with every safety feature on, configured by a generated YAML; `proxy`
 * adds keys to its `proxy:` section (the POST benchmark sets `replayBodyLimitBytes: 0`).
 */
export async function startSidecar(
  dir: string, up: Upstream, caFile: string, engine: Engine, label = `sidecar-${engine}`, proxy: Record<string, unknown> = {},
  /** Keys added to a section (the soak: `service.proxy`); `credentials` given here replaces the inline pair. */
  sections: Record<string, Record<string, unknown>> = {},
): Promise<SidecarProc> {
  mkdirSync(dir, { recursive: true });
  const base: Record<string, Record<string, unknown>> = {
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    service: { baseUrl: up.url, caFile },
    credentials: { apiKey: API_KEY, password: PASSWORD },
    proxy: { ...proxy, engine },
    guard: { allow: ['127.0.0.1/32', '::1/128'] },
    log: { level: 'info', requests: false },
    shutdown: { delaySeconds: 0, timeoutSeconds: 1 },
  };
  const config: Record<string, Record<string, unknown>> = { ...sections };
  for (const [k, v] of Object.entries(base)) config[k] = k === 'credentials' && sections[k] ? sections[k] : { ...v, ...sections[k] };
  const file = join(dir, `${label}.yaml`);
  writeFileSync(file, stringify(config), { mode: 0o600 });
  const env = proxyEnv({ NODE_OPTIONS: deployedNodeOptions() });
  const proc = spawnManaged(label, process.execPath, [...deployedNodeArgs(), sidecarCli(), 'run', '--config', file], { cpu: PROXY_CPU, cwd: ROOT, env });
  const started = JSON.parse(await proc.waitForLine((l) => l.includes('"sidecar started"'), 20_000)) as { listen: string; admin: string };
  const port = Number(started.listen.split(':').pop());
  const adminPort = Number(started.admin.split(':').pop());
  const readyAt = await pollReady(adminPort, 20_000);
  const tokenLine = proc.lines.find((l) => l.includes('"token obtained"'));
  const tokenRttMs = tokenLine ? (JSON.parse(tokenLine) as { latencyMs?: number }).latencyMs : undefined;
  return {
    name: label, pids: [proc.pid], port, adminPort, procs: [proc], stop: () => proc.stop(),
    readyMs: readyAt - proc.spawnedAt, tokenRttMs,
  };
}

/**
 * Wall time of `node -e 0` on the proxy's CPU, in the proxies' environment, spawned the way the
 * sidecar is (through taskset when pinning): the start-up floor any Node process pays. With
 * `script`, the same for a one-line program instead (the TLS-client floor: Node's trust store).
 */
export async function nodeStartFloorMs(script = '0'): Promise<number> {
  const proc = spawnManaged('node-e', process.execPath, [...deployedNodeArgs(), '-e', script], { cpu: PROXY_CPU, env: proxyEnv({ NODE_OPTIONS: deployedNodeOptions() }) });
  const code = await proc.exited;
  const ms = performance.now() - proc.spawnedAt;
  if (code !== 0) throw new Error(`node -e ${script} exited with ${String(code)}`);
  return ms;
}

/** What any Node TLS client pays before its first handshake: Node's trust store (~140 bundled roots parsed). */
export const TLS_CLIENT_FLOOR_SCRIPT = "require('node:tls').createSecureContext()";

const pollAgent = new HttpAgent({ keepAlive: true, maxSockets: 1 });

/** Polls /readyz every 2 ms; resolves with performance.now() of the first 200. */
async function pollReady(adminPort: number, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const status = await new Promise<number>((r) => {
      const req = httpRequest({ host: '127.0.0.1', port: adminPort, path: '/readyz', agent: pollAgent, timeout: 2000 }, (res) => {
        res.resume();
        res.on('end', () => r(res.statusCode ?? 0));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => r(0));
      req.end();
    });
    if (status === 200) return performance.now();
    if (performance.now() > deadline) throw new Error(`/readyz not 200 after ${timeoutMs} ms (last ${status})`);
    await sleep(2);
  }
}

/** A few plain requests through a proxy (warm-up without the load generator). */
export async function touch(port: number, path: string, n: number): Promise<number[]> {
  const statuses: number[] = [];
  const agent = new HttpAgent({ keepAlive: true, maxSockets: 4 });
  for (let i = 0; i < n; i++) {
    statuses.push(await new Promise<number>((r) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
        res.resume();
        res.on('end', () => r(res.statusCode ?? 0));
      });
      req.on('error', () => r(0));
      req.end();
    }));
  }
  agent.destroy();
  return statuses;
}
