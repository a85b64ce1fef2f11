import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { runCli, spawnCli } from '../helpers/cli.js';
import { CREDENTIALS, echoed, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/** Asynchronous: the simulator answering the sidecar runs in this process. */
const run = async (file: string, args: string[]) => (await promisify(execFile)(file, args, { encoding: 'utf8' })).stdout;

/** Python's http.client over AF_UNIX, as a legacy Python app would talk to the socket. */
const PYTHON = `
import http.client, socket, sys
class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__('localhost')
        self.path = path
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)
c = UnixConnection(sys.argv[1])
c.request('GET', '/pub/b2b/v1/echo')
r = c.getresponse()
print(r.status)
print(r.read().decode())
`;

describe('the proxy on a unix socket (listen.socket)', () => {
  it('serves curl --unix-socket and Python http.client with the token attached, with the configured mode; a second instance does not steal it; SIGTERM removes it', async (t) => {
    const tls = await testTls();
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const dir = mkdtempSync(join(tmpdir(), 'b2b-socket-'));
    const socket = join(dir, 'sidecar.sock');
    const config = join(dir, 'sidecar.yaml');
    writeFileSync(config, [
      `listen: { host: 127.0.0.1, port: 0, socket: "${socket}", socketMode: "0660" }`,
      'admin: { host: 127.0.0.1, port: 0 }',
      `service: { baseUrl: "${sim.baseUrl}", caFile: "${tls.caFile}" }`,
      `credentials: { apiKey: "${CREDENTIALS.apiKey}", password: "${CREDENTIALS.password}" }`,
      '',
    ].join('\n'));
    const sidecar = spawnCli(['run', '--config', config]);
    t.after(async () => {
      sidecar.child.kill('SIGKILL');
      await sidecar.exited;
    });
    const adminPort = (await sidecar.waitFor(/"admin":"127\.0\.0\.1:(\d+)"/))[1];
    await sidecar.waitFor(/"socketGuard":"file permissions/);
    await sidecar.waitFor(/"message":"token obtained"/);
    assert.equal(statSync(socket).mode & 0o777, 0o660);

    const curl = await run('curl', ['-s', '--unix-socket', socket, 'http://localhost/pub/b2b/v1/echo']);
    const viaCurl = JSON.parse(curl) as { headers: Record<string, string> };
    assert.ok(viaCurl.headers, curl);
    assert.equal(viaCurl.headers.apikey, echoed(CREDENTIALS.apiKey), 'the ApiKey was attached');
    assert.match(viaCurl.headers.authorization ?? '', /^sha256:/, 'the token was attached');
    const python = (await run('python3', ['-c', PYTHON, socket])).split('\n');
    assert.equal(python[0], '200');
    assert.equal((JSON.parse(python[1]!) as { headers: Record<string, string> }).headers.apikey, echoed(CREDENTIALS.apiKey));

    // The socket's connections are counted under their own listener label.
    const metrics = await run('curl', ['-s', `http://127.0.0.1:${adminPort}/metrics`]);
    assert.match(metrics, /^b2b_sidecar_connections_opened_total\{listener="socket"\} [2-9]$/m);
    assert.match(metrics, /^b2b_sidecar_connections_opened_total\{listener="proxy"\} 0$/m);
    assert.match(metrics, /^b2b_sidecar_connections_opened_total\{listener="admin"\} 1$/m);

    // A second sidecar on the same path: refused, and the first still serves.
    const second = await runCli(['run', '--config', config]);
    assert.equal(second.code, 1);
    assert.match(second.stderr, /listen\.socket \(B2B_LISTEN_SOCKET\): the proxy listener cannot listen on the unix socket \S+: \S+ is in use by a running process/);
    assert.equal(JSON.parse(await run('curl', ['-s', '--unix-socket', socket, 'http://localhost/pub/b2b/v1/echo'])).headers.apikey, echoed(CREDENTIALS.apiKey));

    sidecar.child.kill('SIGTERM');
    assert.equal(await sidecar.exited, 0, sidecar.stderr());
    assert.equal(existsSync(socket), false, 'the socket file is removed on a clean stop');
  });

  it('check-config refuses a mode every user can connect through unless guard.allowAnyone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-socket-mode-'));
    const config = join(dir, 'sidecar.yaml');
    const write = (extra: string) => writeFileSync(config, `listen: { socket: "${join(dir, 's.sock')}", socketMode: "0666" }\nservice: { baseUrl: "https://api.example.com" }\ncredentials: { apiKey: k-123456, password: p-123456 }\n${extra}`);
    write('');
    const refused = await runCli(['check-config', '--config', config]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /listen\.socketMode: "0666" lets every user of this host connect/);
    write('guard: { allowAnyone: true }\n');
    assert.equal((await runCli(['check-config', '--config', config])).code, 0);
  });

  it('check-config and run refuse a socket directory other users can write, unless it is sticky and owned by the sidecar\'s user or root', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-socket-dir-'));
    const config = join(dir, 'sidecar.yaml');
    const socketDir = join(dir, 'shared');
    mkdirSync(socketDir);
    writeFileSync(config, `listen: { host: 127.0.0.1, port: 0, socket: "${join(socketDir, 's.sock')}" }\nadmin: { host: 127.0.0.1, port: 0 }\nservice: { baseUrl: "https://api.example.com" }\ncredentials: { apiKey: k-123456, password: p-123456 }\n`);
    chmodSync(socketDir, 0o777);
    const refused = await runCli(['check-config', '--config', config]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /listen\.socket \(B2B_LISTEN_SOCKET\): directory \S+ is writable by other users \(mode 0777\) without the sticky bit/);
    // run reaches the same verdict before it starts anything.
    const run = await runCli(['run', '--config', config]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /directory \S+ is writable by other users \(mode 0777\)/);
    chmodSync(socketDir, 0o1777); // as /tmp: sticky, owned by the user running the check
    assert.equal((await runCli(['check-config', '--config', config])).code, 0);
  });
});
