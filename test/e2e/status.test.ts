import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import type { SidecarStatus } from '../../src/observability/status.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { ok, startGentokenServer } from '../helpers/gentoken-server.js';
import { CREDENTIALS, send } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startOneTokenVendor, startVendor, VENDORS } from '../helpers/vendors.js';

/**
 * `b2b-sidecar status` (text and --json) and `GET /status` against the built CLI's `run`, one
 * running sidecar per state, against test vendors (test/helpers/vendors.ts, gentoken-server.ts):
 * ready, no token, attach suspect, superseded, refresh failing; and exit 3 with nothing listening.
 */
const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-status-'));
const PROBE = '/pub/b2b/v1/objects/obj-42';

/** GET `path` on a local listener: its status and body as text. */
async function get(port: number, path: string): Promise<{ status: number; body: string }> {
  const answer = await send(port, { path });
  return { status: answer.status, body: answer.body.toString() };
}

interface Running {
  config: string;
  port: number;
  adminPort: number;
  admin: string;
}

/** Starts `run` with `extra` config beside the service at `baseUrl`; ports read back from its start log. */
async function run(t: TestContext, name: string, baseUrl: string, extra: Record<string, unknown> = {}): Promise<Running> {
  const config = join(dir, `${name}.yaml`);
  writeFileSync(config, stringify({ listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 }, service: { baseUrl, caFile: tls.caFile }, credentials: CREDENTIALS, ...extra }));
  const sidecar = spawnCli(['run', '--config', config]);
  t.after(async () => {
    sidecar.child.kill('SIGTERM');
    await sidecar.exited;
  });
  const [, listen, admin] = await sidecar.waitFor(/"listen":"127\.0\.0\.1:(\d+)","admin":"127\.0\.0\.1:(\d+)"/);
  return { config, port: Number(listen), adminPort: Number(admin), admin: `http://127.0.0.1:${admin}` };
}

/** GET /status until `until` holds (bounded), then the last status. */
async function statusWhen(s: Running, until: (st: SidecarStatus) => boolean): Promise<SidecarStatus> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await get(s.adminPort, '/status');
    assert.equal(answer.status, 200);
    const st = JSON.parse(answer.body) as SidecarStatus;
    if (until(st)) return st;
    assert.ok(Date.now() < deadline, `status never got there; last: ${answer.body}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `status` and `status --json` by --admin, and `status --config` with the ports from the environment. */
async function cli(s: Running): Promise<{ code: number | null; text: string; json: SidecarStatus; jsonCode: number | null }> {
  const text = await runCli(['status', '--admin', s.admin]);
  const json = await runCli(['status', '--json', '--config', s.config], { B2B_ADMIN_PORT: String(s.adminPort) });
  assert.equal(json.code, text.code, 'the same verdict by --admin and by --config');
  return { code: text.code, text: text.stdout, json: JSON.parse(json.stdout) as SidecarStatus, jsonCode: json.code };
}

describe('status against a running sidecar (whole process)', () => {
  it('ready, then superseded after three other holders of the key (a one-token vendor and token --own-token)', async (t) => {
    const vendor = await startOneTokenVendor(PROBE);
    t.after(() => vendor.close());
    const s = await run(t, 'ready', vendor.url);
    const ready = await statusWhen(s, (st) => st.ready);
    assert.equal(ready.state, 'ready');
    assert.equal((await get(s.port, PROBE)).status, 200);
    const c = await cli(s);
    assert.equal(c.code, 0);
    assert.match(c.text, /^ready\ntoken: {9}[0-9a-f]+ \(generation 1\), age [\d.]+ s, expires in [\d.]+ s/);
    assert.match(c.text, new RegExp(`^listeners: {5}proxy 127\\.0\\.0\\.1:${s.port}, admin 127\\.0\\.0\\.1:${s.adminPort}$`, 'm'));
    assert.match(c.text, /^build: {9}b2b-sidecar \d+\.\d+\.\d+\S*, node v24\./m);
    assert.equal(c.json.state, 'ready');
    assert.deepEqual(c.json.warnings, []);
    assert.equal(c.json.token?.generation, 1);
    assert.ok(!c.text.includes(vendor.tokens[0]!) && !JSON.stringify(c.json).includes(vendor.tokens[0]!), 'never the token itself');
    // /readyz as before: no warnings key.
    assert.deepEqual(JSON.parse((await get(s.adminPort, '/readyz')).body), { status: 'ready' });

    // Another holder of the same ApiKey, three times: each token it obtains revokes the sidecar's.
    for (let i = 1; i <= 3; i++) {
      const other = await runCli(['token', '--config', s.config, '--own-token'], { B2B_ADMIN_PORT: String(s.adminPort) });
      assert.equal(other.code, 0, other.stderr);
      assert.equal((await get(s.port, PROBE)).status, 200, 'the 401 was renewed and replayed');
      const st = await statusWhen(s, (x) => x.token?.superseded?.total === i);
      assert.equal(st.token?.superseded?.inWindow, i);
    }
    const superseded = await statusWhen(s, (st) => st.state === 'superseded');
    assert.equal(superseded.ready, true);
    assert.equal(superseded.token?.superseded?.likelyAnotherHolder, true);
    assert.ok(Date.parse(superseded.token!.superseded!.lastAt) <= Date.now(), 'a time, not only a count');
    assert.match(superseded.warnings.join('\n'), /another process probably obtains tokens with the same ApiKey/);
    const after = await cli(s);
    assert.equal(after.code, 0, 'superseded is a warning: still ready');
    assert.match(after.text, /^superseded\n/);
    assert.match(after.text, /^superseded: {4}last at \S+Z, 3 in 10 min: another process probably obtains tokens with the same ApiKey$/m);
    assert.equal(after.json.state, 'superseded');
    const readyz = JSON.parse((await get(s.adminPort, '/readyz')).body) as { status: string; warnings: string[] };
    assert.equal(readyz.status, 'ready');
    assert.deepEqual(readyz.warnings, superseded.warnings, '/readyz renders the same warnings');
  });

  it('no token: gentoken refuses (403), exit 1 with the reason and the cause', async (t) => {
    const gentoken = await startGentokenServer(() => ({ status: 403, body: { message: 'Forbidden' } }));
    t.after(() => gentoken.close());
    const s = await run(t, 'no-token', gentoken.url);
    await statusWhen(s, (st) => st.token?.lastRefreshError !== undefined);
    const c = await cli(s);
    assert.equal(c.code, 1);
    assert.equal(c.jsonCode, 1);
    assert.match(c.text, /^no token: gentoken refused \(HTTP 403\): this host's egress address/);
    assert.match(c.text, /^token: {9}none$/m);
    assert.match(c.text, /^refresh error: refused: gentoken refused \(HTTP 403\).* \(at \S+Z; \d+ failed attempts? since \S+Z\)$/m);
    assert.equal(c.json.state, 'no token');
    assert.equal(c.json.ready, false);
    assert.equal(c.json.token?.lastRefreshError?.cause, 'refused');
    const readyz = await get(s.adminPort, '/readyz');
    assert.equal(readyz.status, 503);
    assert.deepEqual(JSON.parse(readyz.body), { status: 'not ready', message: c.json.reason });
  });

  it('attach suspect: a vendor that answers 400 to every request, on two paths', async (t) => {
    const vendor = await startVendor(VENDORS.spring);
    t.after(() => vendor.close());
    const s = await run(t, 'attach', vendor.url);
    await statusWhen(s, (st) => st.ready);
    for (let i = 0; i < 12; i++) assert.equal((await get(s.port, i % 2 ? PROBE : '/pub/b2b/v1/objects/obj-7')).status, 400);
    const st = await statusWhen(s, (x) => x.state === 'attach suspect');
    assert.equal(st.token?.attachSuspect?.evidence, 'answers');
    const c = await cli(s);
    assert.equal(c.code, 0, 'a warning: the sidecar stays ready');
    assert.match(c.text, /^attach suspect\n/);
    assert.match(c.text, /^warning: {7}no request has succeeded since the token was obtained .*b2b-sidecar doctor --probe \/pub\/b2b\/v1\/objects\/obj-\d+ --discover-attach --own-token\)$/m);
    assert.equal(c.json.state, 'attach suspect');
    assert.deepEqual(JSON.parse((await get(s.adminPort, '/readyz')).body), { status: 'ready', warnings: st.warnings });
  });

  it('refresh failing: the renewal fails (HTTP 500) while the first token still serves', async (t) => {
    const gentoken = await startGentokenServer((_req, i) => (i === 0 ? ok('tok-first-0123456789', 30) : { status: 500, body: { message: 'down' } }));
    t.after(() => gentoken.close());
    const s = await run(t, 'failing', gentoken.url, { token: { renewAt: 0.05 } });
    const st = await statusWhen(s, (x) => x.state === 'refresh failing');
    assert.equal(st.ready, true);
    assert.equal(st.token?.lastRefreshError?.cause, 'server_error');
    const c = await cli(s);
    assert.equal(c.code, 0, 'the token held still serves');
    assert.match(c.text, /^refresh failing\ntoken: {9}[0-9a-f]+ \(generation 1\)/);
    assert.match(c.text, /^refresh error: server_error: auth server failed \(HTTP 500\)/m);
    assert.match(c.text, /^next attempt: {2}\S+Z$/m);
    assert.equal(c.json.state, 'refresh failing');
    assert.ok(!c.text.includes('tok-first-0123456789') && !JSON.stringify(c.json).includes('tok-first-0123456789'));
  });

  it('exit 3 when nothing listens on the admin address (text and --json), 2 for a bad --admin', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const text = await runCli(['status', '--admin', `http://127.0.0.1:${port}`]);
    assert.equal(text.code, 3);
    assert.equal(text.stdout, '');
    assert.match(text.stderr, new RegExp(`^unreachable: http://127\\.0\\.0\\.1:${port}/status could not be reached \\(ECONNREFUSED\\)$`, 'm'));
    const json = await runCli(['status', '--json', '--admin', `http://127.0.0.1:${port}`]);
    assert.equal(json.code, 3);
    assert.equal((JSON.parse(json.stdout) as { state: string }).state, 'unreachable');
    assert.equal((await runCli(['status', '--admin', 'ftp://x'])).code, 2);
  });
});
