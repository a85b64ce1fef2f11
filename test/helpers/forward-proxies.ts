import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Debian's tinyproxy (installed by .ci/run): a real forward proxy with CONNECT, Basic auth and port rules. */
export const TINYPROXY = '/usr/bin/tinyproxy';

export interface RealProxy {
  /** http://127.0.0.1:port, without credentials. */
  url: string;
  port: number;
  /** The `CONNECT host:port` targets tinyproxy logged so far, in order. */
  connects(): string[];
  /** The whole log, for messages. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Starts tinyproxy in the foreground on a free loopback port. `auth` turns on Basic
 * authentication (407 without it); `connectPorts` lists the only ports CONNECT may reach
 * (tinyproxy answers 403 for others), all ports when absent.
 */
export async function startTinyproxy(options: { auth?: { user: string; password: string }; connectPorts?: number[] } = {}): Promise<RealProxy> {
  if (!existsSync(TINYPROXY)) throw new Error(`${TINYPROXY} is missing: apt-get install tinyproxy (.ci/run does)`);
  const dir = mkdtempSync(join(tmpdir(), 'b2b-tinyproxy-'));
  const logFile = join(dir, 'tinyproxy.log');
  return startOnFreePort('tinyproxy', dir, (port) => {
    writeFileSync(join(dir, 'tinyproxy.conf'), [
      `Port ${port}`, 'Listen 127.0.0.1', 'Timeout 30', `LogFile "${logFile}"`, 'LogLevel Connect', 'MaxClients 64', 'Allow 127.0.0.1',
      ...(options.connectPorts ?? []).map((p) => `ConnectPort ${p}`),
      ...(options.auth ? [`BasicAuth ${options.auth.user} ${options.auth.password}`] : []),
      '',
    ].join('\n'));
    writeFileSync(logFile, '');
    return spawn(TINYPROXY, ['-d', '-c', join(dir, 'tinyproxy.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  }, () => readFileSync(logFile, 'utf8'), /Request \(file descriptor \d+\): CONNECT (\S+) HTTP/g);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** True once the port accepts a connection (bounded), false if the process exits first. */
async function listening(port: number, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port }, () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return false;
}

/** Debian's squid (installed by .ci/run): the proxy most corporate networks run; answers a bad login with 407. */
export const SQUID = '/usr/sbin/squid';

/**
 * Starts squid in the foreground with Basic authentication against an htpasswd file (its own
 * basic_ncsa_auth helper), no caching; `connects()` reads its access log.
 */
export async function startSquid(auth: { user: string; password: string }): Promise<RealProxy> {
  if (!existsSync(SQUID)) throw new Error(`${SQUID} is missing: apt-get install squid (.ci/run does)`);
  const dir = mkdtempSync(join(tmpdir(), 'b2b-squid-'));
  chmodSync(dir, 0o777); // squid started as root runs as the proxy user
  const passwd = join(dir, 'passwd');
  // An APR1 (htpasswd -m) hash, which basic_ncsa_auth reads; made with openssl, as an admin would.
  const hash = spawnSync('openssl', ['passwd', '-apr1', auth.password], { encoding: 'utf8' }).stdout.trim();
  writeFileSync(passwd, `${auth.user}:${hash}\n`, { mode: 0o644 });
  const accessLog = join(dir, 'access.log');
  // Squid writes a CONNECT line when the tunnel ends: "... TCP_TUNNEL/200 ... CONNECT host:port user ...".
  return startOnFreePort('squid', dir, (port) => {
    writeFileSync(join(dir, 'squid.conf'), [
      `http_port 127.0.0.1:${port}`, `pid_filename ${dir}/squid.pid`, `cache_log ${dir}/cache.log`, `access_log ${accessLog}`,
      'cache deny all', 'shutdown_lifetime 0 seconds',
      `auth_param basic program /usr/lib/squid/basic_ncsa_auth ${passwd}`, 'auth_param basic realm corp-proxy',
      'acl authed proxy_auth REQUIRED', 'http_access deny !authed', 'http_access allow authed', '',
    ].join('\n'));
    return spawn(SQUID, ['-N', '-f', join(dir, 'squid.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  }, () => (existsSync(accessLog) ? readFileSync(accessLog, 'utf8') : ''), / CONNECT (\S+) /g);
}

/**
 * Runs a proxy that binds its own port: a free one is taken and handed over (a race another
 * test could win, so a failed start is retried on another port, four times in all).
 */
async function startOnFreePort(name: string, dir: string, start: (port: number) => ChildProcess, log: () => string, connect: RegExp): Promise<RealProxy> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child = start(port);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    if (await listening(port, child)) {
      return {
        url: `http://127.0.0.1:${port}`,
        port,
        log,
        connects: () => [...log().matchAll(connect)].map((m) => m[1]!),
        async stop() {
          child.kill('SIGTERM');
          await exited;
          rmSync(dir, { recursive: true, force: true });
        },
      };
    }
    child.kill('SIGKILL');
    await exited;
    if (attempt === 3) throw new Error(`${name} did not start: ${stderr}${log()}`);
  }
}
