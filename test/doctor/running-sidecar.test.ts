import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { doctorCommand } from '../../src/commands/doctor.js';
import { tokenCommand } from '../../src/commands/token.js';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { findRunningSidecar, hideTokenLike } from '../../src/doctor/running-sidecar.js';
import type { Config } from '../../src/config/schema.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { captureIo } from '../helpers/command-io.js';
import { CREDENTIALS, send, startSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startVendor, type Rule, type Vendor } from '../helpers/vendors.js';

const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-doctor-running-'));
const PROBE = '/pub/b2b/v1/objects/obj-42';
let configs = 0;

/** The sidecar's config: free ports (read back from its start log), the vendor, the test CA. */
function configFor(v: Vendor, credentials: Record<string, string> = CREDENTIALS): string {
  const file = join(dir, `sidecar-${++configs}.yaml`);
  writeFileSync(file, stringify({ listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 }, service: { baseUrl: v.url, caFile: tls.caFile }, credentials }));
  return file;
}

/**
 * A vendor that keeps one live token per ApiKey: issuing a token revokes the one before, as the
 * services the superseded alert is about do. Bearer token and ApiKey, as the default token.attach sends them.
 */
async function oneTokenVendor(t: TestContext, echo = false): Promise<Vendor> {
  let vendor: Vendor | undefined;
  const rule: Rule = (p, req) => {
    if (!(req.url ?? '').startsWith(PROBE)) return { status: 404, body: { message: 'Not Found' } };
    const token = p.header('Authorization')?.replace(/^Bearer /, '');
    if (p.header('ApiKey') !== CREDENTIALS.apiKey || token === undefined || token !== vendor!.tokens.at(-1)) {
      return { status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="b2b"' }, body: { message: 'token revoked or missing' } };
    }
    // A debug build quoting what it was sent, on an object it does not have.
    if (echo) return { status: 404, body: { message: `no object for Authorization: ${p.header('Authorization')}` } };
    return undefined;
  };
  vendor = await startVendor(rule);
  t.after(() => vendor.close());
  return vendor;
}

function getText(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.setTimeout(5000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

function sample(metrics: string, name: string): number {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics);
  assert.ok(m, `${name} not in the exposition`);
  return Number(m[1]);
}

/** Requests the vendor saw with a token it had revoked by then (a supersede shows here first). */
function revokedPresented(v: Vendor): number {
  return v.requests.filter((r) => {
    const token = r.headers.authorization?.replace(/^Bearer /, '');
    return token !== undefined && v.tokens.includes(token) && token !== v.tokens.at(-1);
  }).length;
}

describe('doctor and token beside a running sidecar (whole process)', () => {
  it('on a one-token vendor: doctor probes through the sidecar and token refuses, so the sidecar keeps its token (superseded_total stays 0)', async (t) => {
    const vendor = await oneTokenVendor(t);
    const config = configFor(vendor);
    const sidecar = spawnCli(['run', '--config', config]);
    t.after(async () => {
      sidecar.child.kill('SIGTERM');
      await sidecar.exited;
    });
    const [, listen, admin] = await sidecar.waitFor(/"listen":"127\.0\.0\.1:(\d+)","admin":"127\.0\.0\.1:(\d+)"/);
    const port = Number(listen);
    const adminPort = Number(admin);
    const deadline = Date.now() + 10_000;
    while ((await getText(adminPort, '/readyz')).status !== 200) {
      assert.ok(Date.now() < deadline, 'the sidecar became ready');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal((await getText(port, PROBE)).status, 200);
    assert.equal(vendor.tokens.length, 1);
    // The same config: the ports the sidecar picked, given as the environment gives them.
    const env = { B2B_LISTEN_PORT: String(port), B2B_ADMIN_PORT: String(adminPort) };

    const doctor = await runCli(['doctor', '--config', config, '--probe', PROBE, '--discover-attach', '--json'], env);
    assert.equal(doctor.code, 0, doctor.stdout + doctor.stderr);
    const steps = JSON.parse(doctor.stdout) as DoctorStep[];
    assert.deepEqual(steps.map((s) => [s.step, s.ok]), [['config', true], ['listen', true], ['connect', true], ['gentoken', true], ['probe', true], ['discover-attach', true]]);
    const step = (name: string) => steps.find((s) => s.step === name)!;
    assert.match(step('listen').detail, /in use by the running b2b-sidecar/);
    assert.match(step('gentoken').detail, new RegExp(`^not called: a b2b-sidecar with this config answers on http://127\\.0\\.0\\.1:${adminPort} and holds a valid token .*--own-token`));
    assert.match(step('probe').detail, /through the running sidecar .* → 200/);
    assert.equal(step('discover-attach').result, 'configured');

    const token = await runCli(['token', '--config', config], env);
    assert.equal(token.code, 1);
    assert.equal(token.stdout, '');
    assert.match(token.stderr, new RegExp(`not obtained: a b2b-sidecar with this config answers on http://127\\.0\\.0\\.1:${adminPort} and holds a valid token.*add --own-token`));

    assert.equal(vendor.tokens.length, 1, 'neither command obtained a token');
    assert.equal((await getText(port, PROBE)).status, 200);
    assert.equal(revokedPresented(vendor), 0, 'the sidecar never met a revoked token');
    assert.equal(sample((await getText(adminPort, '/metrics')).body, 'b2b_sidecar_token_superseded_total'), 0);

    // What the default avoids: a token of doctor's own revokes the one the sidecar holds.
    const own = await runCli(['doctor', '--config', config, '--own-token', '--json'], env);
    assert.equal(own.code, 0, own.stdout);
    assert.match((JSON.parse(own.stdout) as DoctorStep[]).find((s) => s.step === 'gentoken')!.detail, /--own-token: a b2b-sidecar with this config runs/);
    assert.equal(vendor.tokens.length, 2);
    await getText(port, PROBE);
    assert.ok(revokedPresented(vendor) >= 1, 'the sidecar\'s next request carried the revoked token');
  });
});

describe('doctor and token beside a running sidecar (in process)', () => {
  /** A sidecar in this process on free ports, and the env that names them for a command. */
  async function besideSidecar(t: TestContext, vendor: Vendor, credentials: Record<string, string> = CREDENTIALS) {
    const s = await startSidecar({ baseUrl: vendor.url, credentials });
    t.after(() => s.stop());
    return { s, env: { B2B_LISTEN_PORT: String(s.port), B2B_ADMIN_PORT: String(s.adminPort) } };
  }

  it('a sidecar without a valid token: doctor says why from its /readyz and calls no gentoken', async (t) => {
    const vendor = await oneTokenVendor(t);
    const { env } = await besideSidecar(t, vendor, { ...CREDENTIALS, password: 'a-wrong-password-1' });
    const deadline = Date.now() + 5000;
    while (vendor.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const calls = vendor.requests.length;
    const run = captureIo(env);
    const code = await doctorCommand({ config: configFor(vendor), probe: PROBE, json: true }, run.io);
    assert.equal(code, 1);
    const gentoken = (JSON.parse(run.stdout()) as DoctorStep[]).find((s) => s.step === 'gentoken')!;
    assert.equal(gentoken.ok, false);
    assert.match(gentoken.detail, /^not called: a b2b-sidecar with this config answers on .* but holds no valid token: /);
    assert.match(gentoken.hint!, /--own-token/);
    assert.ok(calls > 0, 'the sidecar tried');
    assert.ok(!vendor.requests.some((r) => r.url.endsWith('/auth/gentoken') && r.body.includes(CREDENTIALS.password)), 'the right password never went out: only the sidecar called gentoken');
  });

  it('a wrong token.attach found through the sidecar: discovery asks for --own-token instead of revoking its token', async (t) => {
    const vendor = await oneTokenVendor(t);
    const { s, env } = await besideSidecar(t, vendor);
    await send(s.port, { path: PROBE }); // the sidecar obtains its token
    const issued = vendor.tokens.length;
    const run = captureIo(env);
    // A path the vendor answers 404 whatever the token: from here the configured attach may be wrong.
    const code = await doctorCommand({ config: configFor(vendor), probe: '/pub/b2b/v1/nothing', discoverAttach: true, json: true }, run.io);
    assert.equal(code, 1);
    const steps = JSON.parse(run.stdout()) as DoctorStep[];
    const discovery = steps.find((x) => x.step === 'discover-attach')!;
    assert.equal(discovery.result, 'needs-own-token');
    assert.match(discovery.hint!, /--own-token/);
    assert.equal(vendor.tokens.length, issued, 'no token was obtained');
  });

  it('token refuses with exit 1 naming --own-token and token.file, and prints no token', async (t) => {
    const vendor = await oneTokenVendor(t);
    const { env } = await besideSidecar(t, vendor);
    const file = join(dir, `with-token-file-${++configs}.yaml`);
    writeFileSync(file, stringify({ service: { baseUrl: vendor.url, caFile: tls.caFile }, credentials: CREDENTIALS, token: { file: join(dir, 'token') } }));
    const run = captureIo(env);
    assert.equal(await tokenCommand({ config: file }, run.io), 1);
    assert.equal(run.stdout(), '');
    assert.match(run.stderr(), /--own-token/);
    assert.match(run.stderr(), /token\.file \(.*token\)/);
    const own = captureIo(env);
    assert.equal(await tokenCommand({ config: file, ownToken: true }, own.io), 0, own.stderr());
    assert.equal(own.stdout().trim(), vendor.tokens.at(-1));
  });

  it('an answer echoing the token the sidecar attached: doctor, which does not know that token, hides it', async (t) => {
    const vendor = await oneTokenVendor(t, true);
    const { env } = await besideSidecar(t, vendor);
    for (const json of [false, true]) {
      const run = captureIo(env);
      await doctorCommand({ config: configFor(vendor), probe: PROBE, json }, run.io);
      const printed = run.stdout() + run.stderr();
      assert.match(printed, /through the running sidecar .* → 404: no object for Authorization: Bearer \[REDACTED\]/);
      for (const token of vendor.tokens) assert.ok(!printed.includes(token), `the sidecar's token was printed: ${printed}`);
    }
  });
});

describe('findRunningSidecar', () => {
  it('takes nothing else for a sidecar, and gives up on an admin address that drips its answer within its deadline', async (t) => {
    const timers: NodeJS.Timeout[] = [];
    const server = createServer((req, res) => {
      if (req.url === '/healthz') {
        // Headers, then a byte now and then for ever.
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{');
        timers.push(setInterval(() => res.write(' '), 50));
        return;
      }
      res.end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => { timers.forEach(clearInterval); server.closeAllConnections(); server.close(() => resolve()); }));
    const { port } = server.address() as { port: number };
    const started = performance.now();
    assert.equal(await findRunningSidecar({ admin: { host: '127.0.0.1', port }, listen: { host: '127.0.0.1', port: 1 } } as Config, 300), undefined);
    assert.ok(performance.now() - started < 5000, 'bounded by its own deadline');
    // Something else answering JSON on the address is not a sidecar either.
    const other = createServer((_req, res) => res.end('{"status":"UP"}'));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => other.close(() => resolve())));
    assert.equal(await findRunningSidecar({ admin: { host: '0.0.0.0', port: (other.address() as { port: number }).port }, listen: { host: '127.0.0.1', port: 1 } } as Config), undefined);
    assert.equal(await findRunningSidecar({ admin: { host: '127.0.0.1', port: 0 }, listen: { host: '127.0.0.1', port: 1 } } as Config), undefined, 'port 0: nothing to ask');
  });
});

describe('hideTokenLike', () => {
  it('hides words that could be tokens and keeps paths, messages and dates', () => {
    const tokens = [
      'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo', // base64url, 43 characters
      '0f3a9c5e7b1d2f4a6c8e0b2d4f6a8c0e', // hex
      '550e8400-e29b-41d4-a716-446655440000', // a UUID
      'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U', // a JWT
      'ab/cd+efghijklmnopqrstu1234567890ABCD==', // base64 with / and +
      'QmFyQmF6UXV4UXV1eFF1dXpDb3JnZUdyYXVsdA', // base64url that happens to hold no digit
    ];
    for (const token of tokens) assert.equal(hideTokenLike(`invalid token ${token}.`), 'invalid token [REDACTED]', token);
    for (const kept of [
      "Required request header 'X-Access-Token' for method parameter type String is not present",
      '{"timestamp":"2026-11-25T02:00:00.000+00:00","path":"/pub/b2b/v1/objects/obj-42"}',
      'HttpMediaTypeNotAcceptableException at org.springframework.web.bind',
    ]) assert.equal(hideTokenLike(kept), kept);
  });
});
