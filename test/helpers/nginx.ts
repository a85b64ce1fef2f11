import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testTls } from './tls.js';

/** Debian's nginx (nginx-light, installed by .ci/run). */
export const NGINX = '/usr/sbin/nginx';

export interface RealNginx {
  url: string;
  /** The access log so far, one entry per line of the `probe` format below. */
  accessLog(): Array<{ connection: string; requests: number; method: string; uri: string; authorization: string; probe: string; status: number }>;
  stop(): Promise<void>;
}

/**
 * A real nginx as the service, over TLS with the test certificate, on a port bound with
 * listen(0) here and handed to nginx as an inherited socket (its `NGINX` variable, the
 * mechanism of its binary upgrade), so no port is guessed. `http` holds extra directives for
 * the http block, `locations` the server's location blocks.
 */
export async function startNginx(options: { http: string; locations: string }): Promise<RealNginx> {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: apt-get install nginx-light (.ci/run does)`);
  const tls = await testTls();
  const dir = mkdtempSync(join(tmpdir(), 'b2b-nginx-'));
  writeFileSync(join(dir, 'cert.pem'), tls.certPem);
  writeFileSync(join(dir, 'key.pem'), tls.keyPem);
  const listener = createServer();
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  const port = (listener.address() as AddressInfo).port;
  const log = join(dir, 'access.log');
  writeFileSync(join(dir, 'nginx.conf'), `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 512; }
http {
  log_format probe '$connection $connection_requests $request_method $uri "$http_authorization" "$http_x_probe" $status';
  access_log ${log} probe;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  default_type application/json;
  ${options.http}
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${dir}/cert.pem;
    ssl_certificate_key ${dir}/key.pem;
    ${options.locations}
  }
}
`);
  writeFileSync(log, '');
  // The master process takes the listening socket as fd 3; ours is closed once it has it.
  const child: ChildProcess = spawn(NGINX, ['-p', dir, '-c', join(dir, 'nginx.conf')], {
    stdio: ['ignore', 'ignore', 'pipe', (listener as unknown as { _handle: unknown })._handle as never],
    env: { ...process.env, NGINX: '3;' },
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  listener.close();
  // Ready once it answers; bounded.
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`nginx exited: ${stderr}`);
    try {
      if (readFileSync(join(dir, 'nginx.pid'), 'utf8').trim()) break;
    } catch { /* not yet */ }
    if (Date.now() > deadline) throw new Error(`nginx did not start: ${stderr}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    url: `https://localhost:${port}`,
    accessLog: () => readFileSync(log, 'utf8').split('\n').filter(Boolean).map((line) => {
      const m = /^(\d+) (\d+) (\S+) (\S+) "([^"]*)" "([^"]*)" (\d+)$/.exec(line);
      if (!m) throw new Error(`unexpected access log line: ${line}`);
      return { connection: m[1]!, requests: Number(m[2]), method: m[3]!, uri: m[4]!, authorization: m[5]!, probe: m[6]!, status: Number(m[7]) };
    }),
    async stop() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
