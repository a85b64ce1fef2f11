import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { doctorCommand } from '../../src/commands/doctor.js';
import { tokenCommand } from '../../src/commands/token.js';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { findRunningSidecar, hideTokenLike } from '../../src/doctor/running-sidecar.js';
import type { Config } from '../../src/config/schema.js';
import { captureIo } from '../helpers/command-io.js';
import { CREDENTIALS, send, startSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startOneTokenVendor, type Vendor } from '../helpers/vendors.js';

const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-doctor-running-'));
const PROBE = '/pub/b2b/v1/objects/obj-42';
let configs = 0;

/** The config of a sidecar beside which doctor runs: free ports (the env names the ones it bound), the vendor, the test CA. */
function configFor(v: Vendor): string {
  const file = join(dir, `sidecar-${++configs}.yaml`);
  writeFileSync(file, stringify({ listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 }, service: { baseUrl: v.url, caFile: tls.caFile }, credentials: CREDENTIALS }));
  return file;
}

async function oneTokenVendor(t: TestContext, echo = false): Promise<Vendor> {
  const vendor = await startOneTokenVendor(PROBE, { echo });
  t.after(() => vendor.close());
  return vendor;
}

describe('doctor and token beside a running sidecar', () => {
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

describe('doctor beside a sidecar whose renewals fail (it still holds a valid token)', () => {
  it('the gentoken step fails, naming the sidecar\'s last renewal error, and doctor exits 1 (was: all ✓)', async (t) => {
    const { FakeClock } = await import('../helpers/fake-clock.js');
    const { startSimulator } = await import('../helpers/stack.js');
    const clock = new FakeClock();
    const sim = await startSimulator({ ttlSeconds: 900, clock });
    t.after(() => sim.stop());
    const s = await startSidecar({ baseUrl: sim.baseUrl, clock });
    t.after(() => s.stop());
    await clock.advanceAsync(0, () => new Promise((r) => setTimeout(r, 50)));
    assert.ok(s.sidecar.tokens?.current(), 'the first token');
    // Every later gentoken answer is a 500: the scheduled renewal (at 66 % of 900 s) fails, the token stays valid.
    sim.faults.failNextTokenRequests(1000, 500);
    await clock.advanceAsync(650_000, () => new Promise((r) => setTimeout(r, 20)));
    const env = { B2B_LISTEN_PORT: String(s.port), B2B_ADMIN_PORT: String(s.adminPort) };
    assert.equal((await send(s.adminPort, { path: '/readyz' })).status, 200, 'still ready: the token is valid');
    const file = join(dir, 'failing-renewals.yaml');
    writeFileSync(file, stringify({ listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 }, service: { baseUrl: sim.baseUrl, caFile: tls.caFile }, credentials: CREDENTIALS }));
    const run = captureIo(env);
    const code = await doctorCommand({ config: file, json: true }, run.io);
    const gentoken = (JSON.parse(run.stdout()) as DoctorStep[]).find((x) => x.step === 'gentoken')!;
    assert.equal(code, 1, run.stdout());
    assert.equal(gentoken.ok, false);
    assert.match(gentoken.detail, /still holds a valid token \(until .*\), but its renewals are failing: \d+ attempts? since .*, the last: .*500/);
  });
});
