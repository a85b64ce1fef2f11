import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { doctorCommand } from '../../src/commands/doctor.js';
import { tokenCommand } from '../../src/commands/token.js';
import { credentialSets } from '../../src/config/credential-sets.js';
import type { Config } from '../../src/config/schema.js';
import { validateConfig } from '../../src/config/validate-config.js';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { reachSet, type SetReach, type SetUnreachable } from '../../src/doctor/set-reach.js';
import { createSidecar } from '../../src/sidecar.js';
import { captureIo } from '../helpers/command-io.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { startSetVendor } from '../helpers/set-vendor.js';
import { testTls } from '../helpers/tls.js';

/**
 * doctor and token beside a running sidecar of several credential sets (docs/credential-sets.md):
 * each set's probe goes out the way an app's request chooses that set, so the service sees that
 * set's token, and each set's readiness is its own. Before, every probe went to the shared
 * listener bare, where the default set (here one whose key the vendor refuses) answered 503, and
 * the sidecar's overall /readyz made every set look tokenless.
 */
const KEYS = { 'key-a-0123456789': 'password-a-0123456789', 'key-b-0123456789': 'password-b-0123456789', 'key-c-0123456789': 'password-c-0123456789', 'key-d-0123456789': 'password-d-0123456789' };
const PROBE = '/pub/b2b/v1/whoami';
const dir = mkdtempSync(join(tmpdir(), 'b2b-doctor-sets-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** The sets: a by its own listener, b by path prefix, c by header, d the default (its password is wrong). */
function raw(vendorUrl: string, caFile: string, ports: { listen: number; admin: number; a: number }): Record<string, unknown> {
  return {
    listen: { host: '127.0.0.1', port: ports.listen },
    admin: { host: '127.0.0.1', port: ports.admin },
    service: { baseUrl: vendorUrl, caFile },
    token: { file: join(dir, 'token') },
    credentials: [
      { id: 'a', apiKey: 'key-a-0123456789', password: KEYS['key-a-0123456789'], listen: { host: '127.0.0.1', port: ports.a } },
      { id: 'b', apiKey: 'key-b-0123456789', password: KEYS['key-b-0123456789'], pathPrefix: '/objects-b/' },
      { id: 'c', apiKey: 'key-c-0123456789', password: KEYS['key-c-0123456789'], headerAllow: ['127.0.0.1/32'] },
      { id: 'd', apiKey: 'key-d-0123456789', password: 'not-the-password-of-d' },
    ],
  };
}

function readyz(port: number, id: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: `/readyz?credential=${id}` }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    }).on('error', reject).end();
  });
}

async function besideSets(t: TestContext) {
  const vendor = await startSetVendor(KEYS);
  t.after(() => vendor.close());
  const { caFile } = await testTls();
  const log = createCaptureLogger();
  const sidecar = createSidecar(validateConfig(raw(vendor.url, caFile, { listen: 0, admin: 0, a: 0 })), { logger: log.logger, secrets: log.secrets, env: {} });
  const { port, adminPort } = await sidecar.start();
  t.after(() => sidecar.stop());
  const a = Number(sidecar.status().listeners.sets!.a!.split(':').at(-1));
  const ready = async () => (await Promise.all(['a', 'b', 'c'].map((id) => readyz(adminPort, id)))).every((s) => s === 200);
  for (let i = 0; i < 2000 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(await ready(), 'sets a, b and c hold tokens');
  // The config the operator runs doctor with: the same, with the ports the sidecar bound.
  return { vendor, config: validateConfig(raw(vendor.url, caFile, { listen: port, admin: adminPort, a })) };
}

describe('doctor beside a running sidecar of several credential sets', () => {
  it('probes each set the way an app chooses it (own listener, path prefix, B2B-Credential), so the service sees that set\'s token', async (t) => {
    const { vendor, config } = await besideSets(t);
    const run = captureIo({});
    const code = await doctorCommand({ probe: PROBE, json: true }, run.io, config);
    assert.equal(code, 1, 'd holds no token');
    const report = JSON.parse(run.stdout()) as { credentials: Record<string, DoctorStep[]> };
    const step = (id: string, name: string) => report.credentials[id]!.find((s) => s.step === name);
    for (const id of ['a', 'b', 'c']) {
      assert.equal(step(id, 'gentoken')?.ok, true, `${id}: ${JSON.stringify(report.credentials[id])}`);
      assert.equal(step(id, 'probe')?.status, 200, `${id}: ${JSON.stringify(step(id, 'probe'))}`);
    }
    assert.match(step('a', 'probe')!.detail, /through the running sidecar \(its own listener 127\.0\.0\.1:\d+,/);
    assert.match(step('b', 'probe')!.detail, /through the running sidecar \(127\.0\.0\.1:\d+ with the path prefix \/objects-b,/);
    assert.match(step('c', 'probe')!.detail, /through the running sidecar \(127\.0\.0\.1:\d+ with b2b-credential: c,/);
    assert.equal(step('d', 'gentoken')?.ok, false);
    assert.match(step('d', 'gentoken')!.detail, /holds no valid token/);
    // What the service saw: one probe per set, each with the token of that set's own key.
    const probes = vendor.seen.filter((r) => r.url === PROBE);
    assert.deepEqual(probes.map((r) => [r.apiKey, r.tokenKey, r.status]).sort(), [
      ['key-a-0123456789', 'key-a-0123456789', 200], ['key-b-0123456789', 'key-b-0123456789', 200], ['key-c-0123456789', 'key-c-0123456789', 200],
    ]);
    assert.ok(!vendor.gentokenCalls.get('key-a-0123456789') || vendor.issued.get('key-a-0123456789')!.length === 1, 'doctor obtained no token of its own');
  });

  it('token --credential: refuses naming that set\'s readiness and its own token file', async (t) => {
    const { config } = await besideSets(t);
    const run = captureIo({});
    assert.equal(await tokenCommand({ credential: 'b' }, run.io, config), 1);
    assert.equal(run.stdout(), '');
    assert.match(run.stderr(), /and holds a valid token\./, 'b is ready, though the sidecar as a whole is not (d)');
    assert.match(run.stderr(), new RegExp(`token\\.file \\(${join(dir, 'token').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.b\\)`));
    const d = captureIo({});
    assert.equal(await tokenCommand({ credential: 'd' }, d.io, config), 1);
    assert.match(d.stderr(), /holds no valid token/);
  });
});

describe('reachSet', () => {
  const config = (credentials: unknown[], listenPort = 8080): Config => validateConfig({
    listen: { host: '0.0.0.0', port: listenPort },
    service: { baseUrl: 'https://b2b.example.com' },
    credentials,
  });
  const keys = (id: string) => ({ id, apiKey: `key-${id}-0123456789`, password: `password-${id}-0123456789` });
  const reach = (c: Config, id: string): SetReach | SetUnreachable => {
    const sets = credentialSets(c);
    return reachSet(c.listen, sets.find((s) => s.id === id)!, sets);
  };

  it('follows the sidecar\'s own order of choice, and says when doctor cannot choose the set', () => {
    const c = config([
      { ...keys('own'), listen: { host: '0.0.0.0', port: 8081 } },
      { ...keys('picked'), listen: { host: '127.0.0.1', port: 0 } },
      { ...keys('sock'), listen: { socket: '/run/b2b/sock' } },
      { ...keys('prefixed'), pathPrefix: '/p/' },
      { ...keys('header'), headerAllow: ['127.0.0.0/8'] },
      { ...keys('elsewhere'), headerAllow: ['10.0.0.0/8'] },
      keys('default'),
    ]);
    assert.deepEqual(reach(c, 'own'), { listener: new URL('http://127.0.0.1:8081'), prefix: '', headers: {}, how: 'its own listener 127.0.0.1:8081' });
    assert.match((reach(c, 'picked') as SetUnreachable).unreachable, /^credentials\[1\]\.listen\.port is 0/);
    assert.match((reach(c, 'sock') as SetUnreachable).hint, /curl --unix-socket \/run\/b2b\/sock/);
    assert.deepEqual(reach(c, 'prefixed'), { listener: new URL('http://127.0.0.1:8080'), prefix: '/p', headers: {}, how: '127.0.0.1:8080 with the path prefix /p' });
    assert.deepEqual(reach(c, 'header'), { listener: new URL('http://127.0.0.1:8080'), prefix: '', headers: { 'b2b-credential': 'header' }, how: '127.0.0.1:8080 with b2b-credential: header' });
    // The sidecar would answer 403 to doctor's source: said here, not blamed on the service.
    assert.match((reach(c, 'elsewhere') as SetUnreachable).unreachable, /headerAllow, and that leaves out 127\.0\.0\.1/);
    assert.deepEqual(reach(c, 'default'), { listener: new URL('http://127.0.0.1:8080'), prefix: '', headers: {}, how: '127.0.0.1:8080' });
    // The shared listener's port picked at start: only the sets with listeners of their own can be reached.
    const picked = config([{ ...keys('own'), listen: { host: '127.0.0.1', port: 8081 } }, keys('default')], 0);
    assert.ok('listener' in reach(picked, 'own'));
    assert.match((reach(picked, 'default') as SetUnreachable).unreachable, /^listen\.port is 0/);
  });

  it('a set whose own listener doctor cannot use is still reached through the shared listener by its prefix or the header', () => {
    const c = config([
      { ...keys('sock'), listen: { socket: '/run/b2b/sock' }, pathPrefix: '/s/' },
      { ...keys('picked'), listen: { host: '127.0.0.1', port: 0 }, headerAllow: ['127.0.0.1/32'] },
      keys('default'),
    ]);
    assert.deepEqual(reach(c, 'sock'), { listener: new URL('http://127.0.0.1:8080'), prefix: '/s', headers: {}, how: '127.0.0.1:8080 with the path prefix /s' });
    assert.deepEqual((reach(c, 'picked') as SetReach).headers, { 'b2b-credential': 'picked' });
    // A list of one set chosen by header has no default: the shared listener answers a bare request 400.
    const one = config([{ ...keys('only'), headerAllow: ['127.0.0.1/32'] }]);
    assert.deepEqual((reach(one, 'only') as SetReach).headers, { 'b2b-credential': 'only' });
  });

  it('one set (the object form): the shared listener, as before', () => {
    const { id: _id, ...single } = keys('x');
    const c = validateConfig({ listen: { host: '127.0.0.1', port: 8080 }, service: { baseUrl: 'https://b2b.example.com' }, credentials: single });
    const [set] = credentialSets(c);
    assert.deepEqual(reachSet(c.listen, set!, [set!]), { listener: new URL('http://127.0.0.1:8080'), prefix: '', headers: {}, how: '127.0.0.1:8080' });
  });
});
