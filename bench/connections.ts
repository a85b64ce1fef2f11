/**
 * What one keep-alive client connection costs: `--clients` (10,000) connections from 127.0.0.1,
 * each sending a GET and, after each answer, the next one 4–4.5 s later (inside the 5 s keep-alive
 * window, so no connection is closed), first against the sidecar (GET /pub/b2b/v1/json1k, proxied;
 * `proxy.maxConnections` and `proxy.maxConnectionsPerSource` raised for it), then against a bare
 * Node HTTP server with the same listener settings (bench/bare-http-server.mjs), in the same run.
 * Reported: RSS and USS before the clients and with them all open (median of 5 samples 1 s apart,
 * after two request rounds), and the difference per connection. Loopback only.
 *
 *   npm run build && node --import tsx bench/connections.ts [--clients N] [--out FILE] [--dist DIR]
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { MB, privateMemory, statusBytes } from './lib/proc.js';
import { prepareTls, proxyEnv, ROOT, setDistDir, sleep, startSidecar, startUpstream, touch } from './lib/setup.js';
import { HAS_TASKSET, pinSelf, PROXY_CPU, spawnManaged, stopAll } from './lib/spawn.js';

const args = process.argv.slice(2);
const arg = (name: string, def: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? args[i + 1]! : def;
};
const clients = Number(arg('--clients', '10000'));
const out = arg('--out', join(ROOT, 'bench', 'results', 'connections-latest.md'));
setDistDir(arg('--dist', join(ROOT, 'dist')));
const KB = 1024;

interface Memory { rss: number; uss: number }
interface Measured { before: Memory; during: Memory; open: number; answered: number; failed: number; closedEarly: number }

function memory(pid: number): Memory {
  return { rss: statusBytes(pid, 'VmRSS') ?? NaN, uss: privateMemory(pid)?.uss ?? NaN };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function sampled(pid: number): Promise<Memory> {
  const samples: Memory[] = [];
  for (let i = 0; i < 5; i++) {
    samples.push(memory(pid));
    await sleep(1000);
  }
  return { rss: median(samples.map((s) => s.rss)), uss: median(samples.map((s) => s.uss)) };
}

/** Opens `n` keep-alive clients that request `path` every 4–4.5 s; resolves once all are open and answered once. */
async function holdClients(pid: number, port: number, path: string, n: number): Promise<Measured> {
  const before = await sampled(pid);
  const sockets: Socket[] = [];
  const timers = new Set<NodeJS.Timeout>();
  let answered = 0;
  let failed = 0;
  let closedEarly = 0;
  let stopping = false;
  const request = `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
  const open = (): Promise<void> => new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    sockets.push(socket);
    let buffer = '';
    let first = true;
    socket.setEncoding('latin1');
    socket.on('error', () => undefined);
    socket.once('close', () => {
      if (!stopping) closedEarly++;
      resolve();
    });
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      const end = buffer.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = /\r\ncontent-length: *(\d+)/i.exec(buffer.slice(0, end));
      const complete = length ? buffer.length >= end + 4 + Number(length[1]) : buffer.endsWith('0\r\n\r\n');
      if (!complete) return;
      if (buffer.startsWith('HTTP/1.1 200 ')) answered++;
      else failed++;
      buffer = '';
      if (first) {
        first = false;
        resolve();
      }
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!stopping) socket.write(request);
      }, 4000 + Math.random() * 500);
      timers.add(timer);
    });
    socket.once('connect', () => socket.write(request));
  });
  // 250 at a time, so the ramp does not look like a flood to the listener.
  for (let i = 0; i < n; i += 250) await Promise.all(Array.from({ length: Math.min(250, n - i) }, open));
  await sleep(9000); // two request rounds on every connection: steady state
  const during = await sampled(pid);
  const stillOpen = sockets.filter((s) => !s.destroyed).length;
  stopping = true;
  for (const t of timers) clearTimeout(t);
  for (const s of sockets) s.destroy();
  await sleep(1000);
  return { before, during, open: stillOpen, answered, failed, closedEarly };
}

async function main(): Promise<void> {
  pinSelf();
  const work = mkdtempSync(join(tmpdir(), 'b2b-conn-'));
  try {
    const { caFile, caPem } = await prepareTls(join(work, 'tls'));
    const up = await startUpstream(join(work, 'tls'), caPem, 900);
    const limit = clients + 2000;
    const sc = await startSidecar(join(work, 'sc'), up, caFile, 'undici', 'sidecar-connections', { maxConnections: limit, maxConnectionsPerSource: limit });
    await touch(sc.port, '/pub/b2b/v1/json1k', 20);
    process.stderr.write(`connections: ${clients} keep-alive clients against the sidecar…\n`);
    const sidecar = await holdClients(sc.pids[0]!, sc.port, '/pub/b2b/v1/json1k', clients);
    await sc.stop();
    const bareProc = spawnManaged('bare-http-server', process.execPath, [join(ROOT, 'bench', 'bare-http-server.mjs')], { cpu: PROXY_CPU, cwd: ROOT, env: proxyEnv({ MAX_CONNECTIONS: String(limit) }) });
    const port = (JSON.parse(await bareProc.waitForLine((l) => l.includes('"server":"ready"'), 15_000)) as { port: number }).port;
    await touch(port, '/', 20);
    process.stderr.write(`connections: ${clients} keep-alive clients against a bare Node HTTP server…\n`);
    const bare = await holdClients(bareProc.pid, port, '/', clients);
    await bareProc.stop();

    const per = (m: Measured, k: keyof Memory) => (m.during[k] - m.before[k]) / clients / KB;
    const row = (name: string, m: Measured) =>
      `| ${name} | ${(m.before.rss / MB).toFixed(1)} → ${(m.during.rss / MB).toFixed(1)} MB | ${(m.before.uss / MB).toFixed(1)} → ${(m.during.uss / MB).toFixed(1)} MB | **${per(m, 'rss').toFixed(2)} KB** | ${per(m, 'uss').toFixed(2)} KB | ${m.open} | ${m.answered} (${m.failed} failed) | ${m.closedEarly} |`;
    const md = [
      '# Memory per keep-alive client connection', '',
      `${new Date().toISOString()} · Node ${process.version} · pinning: ${HAS_TASKSET ? 'server on CPU 1, clients + upstream on CPU 0' : 'none'}`, '',
      `${clients} connections from 127.0.0.1, each asking again 4–4.5 s after every answer (inside the 5 s keep-alive window); memory is the median of 5 samples 1 s apart after two rounds, against the same process before the clients.`, '',
      '| server | RSS before → with clients | USS before → with clients | RSS per connection | USS per connection | connections open at the end | answers | closed early |',
      '|---|---|---|---:|---:|---:|---:|---:|',
      row(`b2b-sidecar (undici, proxy.maxConnections ${limit})`, sidecar),
      row('bare Node HTTP server (same listener settings)', bare),
      '',
      `Sidecar ÷ bare, RSS per connection: ${(per(sidecar, 'rss') / per(bare, 'rss')).toFixed(2)}×.`, '',
      `Command: \`npm run build && node --import tsx bench/connections.ts${args.length ? ` ${args.join(' ')}` : ''}\``, '',
    ].join('\n');
    mkdirSync(join(ROOT, 'bench', 'results'), { recursive: true });
    writeFileSync(out, md);
    process.stdout.write(md + `\nwritten to ${relative(process.cwd(), out)}\n`);
  } finally {
    await stopAll();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch(async (err: unknown) => {
  process.stderr.write(`connections failed: ${(err as Error).stack ?? String(err)}\n`);
  await stopAll();
  process.exitCode = 1;
});
