import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { CREDENTIALS } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startOneTokenVendor, type Vendor } from '../helpers/vendors.js';

const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-doctor-beside-'));
const PROBE = '/pub/b2b/v1/objects/obj-42';

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
  // The per-token series carry the credential set's id (`default` for the object form).
  const m = new RegExp(`^${name}(?:\\{credential="default"\\})? (\\S+)$`, 'm').exec(metrics);
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
    const vendor = await startOneTokenVendor(PROBE);
    t.after(() => vendor.close());
    // The sidecar's config: free ports, read back from its start log.
    const config = join(dir, 'sidecar.yaml');
    writeFileSync(config, stringify({ listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 }, service: { baseUrl: vendor.url, caFile: tls.caFile }, credentials: CREDENTIALS }));
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
