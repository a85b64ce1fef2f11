import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer as createTlsServer } from 'node:tls';
import { testTls } from './tls.js';

/** Debian's redis-server (package redis-server, installed by .ci/run). */
export const REDIS_SERVER = '/usr/bin/redis-server';

export interface RealRedis {
  /** The unix socket it listens on (no TCP port: Redis cannot take port 0 and tell which it got). */
  readonly socket: string;
  /** `unix://` + the socket. */
  readonly url: string;
  /** Ends it with SIGKILL (nothing flushed, clients see a dropped connection) and waits for the exit. */
  kill(): Promise<void>;
  /** Starts it again on the same socket, with the same arguments (an empty data set: no persistence). */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: connected, but answering nothing. */
  pause(): void;
  resume(): void;
  /** Ends it and removes its directory. */
  close(): Promise<void>;
}

/**
 * A real redis-server on a unix socket in a temporary directory, without persistence (`--save ''
 * --appendonly no`), with `args` added to its command line (e.g. `--requirepass`, `--user`).
 */
export async function startRedis(args: readonly string[] = []): Promise<RealRedis> {
  if (!existsSync(REDIS_SERVER)) throw new Error(`${REDIS_SERVER} is missing: apt-get install redis-server (.ci/run does)`);
  const dir = mkdtempSync(join(tmpdir(), 'b2b-redis-'));
  const socket = join(dir, 'redis.sock');
  const commandLine = ['--port', '0', '--unixsocket', socket, '--unixsocketperm', '700', '--dir', dir,
    '--save', '', '--appendonly', 'no', '--loglevel', 'notice', '--logfile', '', ...args];
  let child: ChildProcess | undefined;

  const start = async () => {
    const started = spawn(REDIS_SERVER, commandLine, { stdio: ['ignore', 'pipe', 'pipe'] });
    child = started;
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (/ready to accept connections/i.test(output)) resolve();
      };
      started.stdout!.on('data', onData);
      started.stderr!.on('data', onData);
      started.once('exit', (code, signal) => reject(new Error(`redis-server exited (${code ?? signal}) before it was ready:\n${output}`)));
      started.once('error', reject);
    });
  };
  const kill = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null || running.signalCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGCONT');
    running.kill('SIGKILL');
    await exited;
  };

  await start();
  return {
    socket,
    url: `unix://${socket}`,
    kill,
    restart: start,
    pause: () => child?.kill('SIGSTOP'),
    resume: () => child?.kill('SIGCONT'),
    async close() {
      await kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface Forwarder {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A TCP listener on 127.0.0.1 (listen(0)) that carries each connection to the unix socket, for the
 * `redis://host:port` and `rediss://` forms (with `tls`, it terminates TLS with the test
 * certificate for `localhost`, so the client's CA and name checks are the ones under test).
 */
export async function forwardToSocket(socket: string, options: { tls?: boolean } = {}): Promise<Forwarder> {
  const sockets = new Set<Socket>();
  const carry = (client: Socket) => {
    sockets.add(client);
    const upstream = connect(socket);
    sockets.add(upstream);
    client.pipe(upstream).pipe(client);
    const end = () => { client.destroy(); upstream.destroy(); };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  };
  let server: Server;
  if (options.tls) {
    const tls = await testTls();
    server = createTlsServer({ cert: tls.certPem, key: tls.keyPem }, carry);
  } else {
    server = createServer(carry);
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}
