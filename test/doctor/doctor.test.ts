import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { createSecureContext } from 'node:tls';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import { doctorCommand, type DoctorArgs } from '../../src/commands/doctor.js';
import { tokenCommand } from '../../src/commands/token.js';
import { MAX_DISCOVERY_REQUESTS } from '../../src/doctor/attach-discovery.js';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { checkGentoken } from '../../src/doctor/gentoken-check.js';
import { loadConfig } from '../../src/config/load-config.js';
import { createB2bSimulator, parseTokenIn, type B2bSimulatorOptions } from '../../src/simulator/b2b-simulator.js';
import { generateTlsMaterial, type TlsMaterial } from '../../src/simulator/certs.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { createTokenClient } from '../../src/token/token-client.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { captureIo } from '../helpers/command-io.js';
import { startGentokenServer } from '../helpers/gentoken-server.js';
import { CREDENTIALS } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startUpstream } from '../helpers/upstream.js';

const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-doctor-'));
const OBJECT_PATH = `/pub/b2b/v1/objects/${CREDENTIALS.rkObjectId}`;
/**
 * A certificate made by openssl, not by our generator: CN=agent1 without subjectAltName, signed
 * by the Node.js test CA "ca1". From nodejs/undici, test/fixtures/{ca,cert,key}.pem at commit
 * 7eb7c8ec8f23acd9c3da93a286162f8c1dc68326 (last changed in e04abdd195d5dbaca1cc3c71c1aa32fd4b638f14).
 */
const AGENT1_DIR = fileURLToPath(new URL('../fixtures/undici-agent1/', import.meta.url));
const agent1: TlsMaterial = {
  caPem: readFileSync(join(AGENT1_DIR, 'ca.pem'), 'utf8'),
  certPem: readFileSync(join(AGENT1_DIR, 'cert.pem'), 'utf8'),
  keyPem: readFileSync(join(AGENT1_DIR, 'key.pem'), 'utf8'),
};
const agent1CaFile = join(AGENT1_DIR, 'ca.pem');

let configs = 0;
/**
 * Only free ports: a sidecar another test (or anyone on this machine) runs on the default admin
 * port would be taken for this config's running sidecar.
 */
const FREE_PORTS = { listen: { port: 0 }, admin: { port: 0 } };

/** Writes a config file: the test credentials, the test CA, free ports, and `service`/`extra` on top. */
function configFile(service: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const file = join(dir, `sidecar-${++configs}.yaml`);
  writeFileSync(file, stringify({ service: { caFile: tls.caFile, ...service }, credentials: CREDENTIALS, ...FREE_PORTS, ...extra }));
  return file;
}

async function startSim(t: TestContext, extra: Partial<B2bSimulatorOptions> = {}) {
  const sim = createB2bSimulator({ apiKey: CREDENTIALS.apiKey, password: CREDENTIALS.password, ttlSeconds: 900, tls, rkObjectId: CREDENTIALS.rkObjectId, ...extra });
  t.after(() => sim.stop());
  await sim.start();
  return sim;
}

async function doctor(args: DoctorArgs) {
  const run = captureIo({});
  const code = await doctorCommand({ sleep: async () => undefined, ...args }, run.io); // discovery unpaced: no real waiting
  const stdout = run.stdout();
  return { code, stdout, stderr: run.stderr(), lines: stdout.split('\n').filter(Boolean), steps: args.json ? (JSON.parse(stdout) as DoctorStep[]) : [] };
}

/** The line of one step in the text report. */
function line(lines: string[], step: string): string {
  const found = lines.find((l) => l.slice(2).startsWith(`${step}: `));
  assert.ok(found, `no ${step} line in:\n${lines.join('\n')}`);
  return found;
}

function assertNoSecrets(text: string, token?: string): void {
  for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, ...(token ? [token] : [])]) {
    assert.ok(!text.includes(secret), `a secret leaked: ${text}`);
  }
  // The simulator's tokens are 32 random bytes in base64url (43 characters).
  assert.doesNotMatch(text, /[A-Za-z0-9_-]{43}/);
}

describe('doctor: every step passing', () => {
  it('prints one ✓ line per step with the exact gentoken URL and the probe, and exits 0', async (t) => {
    const sim = await startSim(t);
    const baseUrl = sim.url.replace('127.0.0.1', 'localhost');
    const out = await doctor({ config: configFile({ baseUrl }), probe: OBJECT_PATH });
    assert.equal(out.code, 0, out.stdout);
    assert.deepEqual(out.lines.map((l) => l.slice(0, 2) + l.slice(2).split(':')[0]), ['✓ config', '✓ listen', '✓ connect', '✓ gentoken', '✓ probe']);
    assert.match(line(out.lines, 'connect'), /localhost resolved to .*TLS chain trusted \(system roots \+ service\.caFile .*\); certificate covers localhost/);
    assert.ok(line(out.lines, 'gentoken').includes(`POST ${baseUrl}/pub/b2b/v1/auth/gentoken → 200, token valid for 900 s`));
    assert.ok(line(out.lines, 'probe').includes(`GET ${baseUrl}${OBJECT_PATH} with token.attach → 200`));
    assert.equal(sim.stats.apiRequests, 1, 'the probe is one request');
    assertNoSecrets(out.stdout + out.stderr);
  });

  it('--json prints the same steps as an array of {step, ok, detail, hint?, url?, status?, ...}', async (t) => {
    const sim = await startSim(t);
    const out = await doctor({ config: configFile({ baseUrl: sim.url }), probe: OBJECT_PATH, json: true });
    assert.equal(out.code, 0);
    assert.deepEqual(out.steps.map((s) => [s.step, s.ok]), [['config', true], ['listen', true], ['connect', true], ['gentoken', true], ['probe', true]]);
    const allowed = new Set(['step', 'ok', 'detail', 'hint', 'url', 'status', 'problems', 'accepted', 'attach', 'attachYaml']);
    for (const s of out.steps) {
      assert.equal(typeof s.detail, 'string');
      for (const key of Object.keys(s)) assert.ok(allowed.has(key), `unexpected key ${key}`);
    }
    const gentoken = out.steps.find((s) => s.step === 'gentoken')!;
    assert.equal(gentoken.url, `${sim.url}/pub/b2b/v1/auth/gentoken`);
    assert.equal(gentoken.status, 200);
    assert.equal(out.steps[4]!.url, `${sim.url}${OBJECT_PATH}`);
    assert.equal(out.steps[4]!.status, 200);
    assertNoSecrets(out.stdout);
  });

  it('never prints the password, the ApiKey or the token, even from a service that echoes them', async (t) => {
    // Every probe answer quotes the request's headers and query back, as a careless service might.
    const upstream = await startUpstream((req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ message: `rejected ${JSON.stringify(req.headers)} ${req.url}` }));
    });
    t.after(() => upstream.close());
    for (const json of [false, true]) {
      const out = await doctor({ config: configFile({ baseUrl: upstream.url }), probe: '/pub/b2b/v1/echo', discoverAttach: true, json });
      assert.equal(out.code, 1);
      assertNoSecrets(out.stdout + out.stderr, 'tok-1-abcdef');
      assert.doesNotMatch(out.stdout, /tok-\d+-abcdef/);
      assert.match(out.stdout, /\[REDACTED\]/, 'the echoed secrets were there and were redacted');
    }
  });
});

describe('doctor: config step', () => {
  it('exits 2 with the same problems check-config lists', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, stringify({ service: { baseUrl: 'http://api.example.com' }, listen: { port: 'abc' }, credentials: { password: CREDENTIALS.password } }));
    const out = await doctor({ config: file, json: true });
    assert.equal(out.code, 2);
    assert.equal(out.steps.length, 1);
    assert.equal(out.steps[0]!.ok, false);
    const check = captureIo({});
    assert.equal(await checkConfigCommand({ config: file }, check.io), 2);
    // check-config lists each problem as a `  - ` line, as run does.
    const listed = check.stderr().split('\n').slice(1).map((l) => l.trim().replace(/^- /, '')).filter(Boolean);
    assert.deepEqual(out.steps[0]!.problems, listed);
    assertNoSecrets(out.stdout);
  });

  it('a credential file run would refuse fails step 1 with exit 2', async () => {
    const empty = join(dir, 'empty-password');
    writeFileSync(empty, '\n');
    const file = join(dir, 'empty-password.yaml');
    writeFileSync(file, stringify({ service: { baseUrl: 'https://localhost:1' }, credentials: { apiKey: CREDENTIALS.apiKey, passwordFile: empty } }));
    const out = await doctor({ config: file });
    assert.equal(out.code, 2);
    assert.match(out.lines[0]!, /^✗ config: /);
    assert.match(out.stdout, /credentials\.passwordFile \(B2B_PASSWORD_FILE\): .* holds only whitespace/);
  });

  it('on systemd: the shipped example config with the credentials LoadCredential= passed in $CREDENTIALS_DIRECTORY passes its config step', async (t) => {
    const sim = await startSim(t);
    const credentials = mkdtempSync(join(tmpdir(), 'b2b-doctor-credentials-'));
    writeFileSync(join(credentials, 'api-key'), `${CREDENTIALS.apiKey}\n`);
    writeFileSync(join(credentials, 'password'), `${CREDENTIALS.password}\n`);
    const example = fileURLToPath(new URL('../../config/sidecar.example.yaml', import.meta.url));
    // The file as shipped; the environment names the test service and free ports (as a unit's Environment= would).
    const run = captureIo({ CREDENTIALS_DIRECTORY: credentials, B2B_BASE_URL: sim.url, B2B_CA_FILE: tls.caFile, B2B_LISTEN_PORT: '0', B2B_ADMIN_PORT: '0' });
    const code = await doctorCommand({ config: example, probe: OBJECT_PATH, json: true }, run.io);
    const steps = JSON.parse(run.stdout()) as DoctorStep[];
    assert.equal(code, 0, run.stdout());
    assert.equal(steps[0]!.step, 'config');
    assert.equal(steps[0]!.ok, true);
    assert.match(steps[0]!.detail, /credentials readable; credentials\.apiKeyFile from the config file is ignored: api-key in \$CREDENTIALS_DIRECTORY/);
    assert.equal(sim.stats.tokenRequests, 1, 'gentoken took the credentials from the directory');
    assertNoSecrets(run.stdout() + run.stderr());
  });

  it('refuses --discover-attach without --probe, and a probe that is not a path, with exit 2', async () => {
    for (const args of [{ discoverAttach: true }, { probe: 'pub/b2b/v1/x' }, { probe: '//evil.example/x' }, { probe: '/a b' }]) {
      const out = captureIo({});
      assert.equal(await doctorCommand({ config: configFile({ baseUrl: 'https://localhost:1' }), ...args }, out.io), 2, JSON.stringify(args));
      assert.match(out.stderr(), /--probe/);
      assert.equal(out.stdout(), '');
    }
  });
});

describe('doctor: connect step', () => {
  it('no caFile: untrusted chain, naming service.caFile', async (t) => {
    const sim = await startSim(t);
    const file = join(dir, 'no-ca.yaml');
    writeFileSync(file, stringify({ service: { baseUrl: sim.url }, credentials: CREDENTIALS, ...FREE_PORTS }));
    const out = await doctor({ config: file, json: true });
    assert.equal(out.code, 1);
    assert.deepEqual(out.steps.map((s) => s.step), ['config', 'listen', 'connect'], 'stops at the failing step');
    const connect = out.steps.find((s) => s.step === 'connect')!;
    assert.match(connect.detail, /TCP 127\.0\.0\.1 port \d+ open; certificate chain not trusted against system roots \(UNABLE_TO_VERIFY_LEAF_SIGNATURE; issuer CN=b2b-sidecar simulator CA\)/);
    assert.match(connect.hint!, /set service\.caFile to a PEM file holding the CA that signed it/);
    assert.equal(sim.stats.tokenRequests, 0, 'no credentials were sent');
  });

  it('a caFile with another CA: untrusted chain, naming service.caFile and its path', async (t) => {
    const sim = await startSim(t);
    const out = await doctor({ config: configFile({ baseUrl: sim.url, caFile: agent1CaFile }) });
    assert.equal(out.code, 1);
    const connect = line(out.lines, 'connect');
    assert.match(connect, /^✗ connect: .*certificate chain not trusted against system roots \+ service\.caFile/);
    assert.ok(connect.includes(`service.caFile (${agent1CaFile}) does not hold the CA that signed the service's certificate (CN=b2b-sidecar simulator CA)`), connect);
  });

  it('an openssl-made certificate for another name: chain trusted, name mismatch', async (t) => {
    const sim = await startSim(t, { tls: agent1 });
    const out = await doctor({ config: configFile({ baseUrl: sim.url.replace('127.0.0.1', 'localhost'), caFile: agent1CaFile }), json: true });
    assert.equal(out.code, 1);
    const connect = out.steps.find((s) => s.step === 'connect')!;
    assert.match(connect.detail, /chain trusted \(system roots \+ service\.caFile .*\), but the certificate does not cover localhost \(it names agent1\)/);
    assert.match(connect.hint!, /use a host the certificate names in service\.baseUrl \(agent1\)/);
  });

  it('an IP address the certificate does not list: name mismatch', async (t) => {
    const material = await generateTlsMaterial(['localhost']);
    const caFile = join(dir, 'localhost-only-ca.pem');
    writeFileSync(caFile, material.caPem);
    const sim = await startSim(t, { tls: material });
    const out = await doctor({ config: configFile({ baseUrl: sim.url.replace('localhost', '127.0.0.1'), caFile }) });
    assert.equal(out.code, 1);
    assert.match(line(out.lines, 'connect'), /does not cover 127\.0\.0\.1 \(it names localhost\)/);
  });

  it('a service certificate on a 1024-bit key (openssl-made): names the key size Node refuses from 24.5', async (t) => {
    const fixture = fileURLToPath(new URL('../fixtures/rsa1024-leaf/', import.meta.url));
    // The vendor's old server: OpenSSL's security level 0 lets it load a key this runtime refuses.
    const server = createHttpsServer({ ciphers: 'DEFAULT:@SECLEVEL=0', cert: readFileSync(join(fixture, 'cert.pem')), key: readFileSync(join(fixture, 'key.pem')) }, (_req, res) => res.end('{}'));
    server.on('tlsClientError', () => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
    const { port } = server.address() as { port: number };
    const out = await doctor({ config: configFile({ baseUrl: `https://localhost:${port}`, caFile: join(fixture, 'ca.pem') }), json: true });
    const connect = out.steps.find((s) => s.step === 'connect')!;
    let refuses = false;
    try {
      createSecureContext({ cert: readFileSync(join(fixture, 'cert.pem')), key: readFileSync(join(fixture, 'key.pem')) });
    } catch (err) {
      refuses = (err as { code?: string }).code === 'ERR_SSL_EE_KEY_TOO_SMALL';
    }
    if (refuses) {
      // Node 24.5 and later (the pinned runtime): refused at the handshake, and said so.
      assert.equal(out.code, 1);
      assert.equal(connect.ok, false);
      assert.match(connect.detail, /the service's certificate key is 1024 bits; Node needs 2048 bits or more/);
      assert.match(connect.hint!, /larger key \(RSA 2048 bits or more, or an EC key\): tell the support team/);
      // The token client (token, run) says it too, where it said "auth server unreachable: UNSPECIFIED".
      const token = captureIo({});
      assert.equal(await tokenCommand({ config: configFile({ baseUrl: `https://localhost:${port}`, caFile: join(fixture, 'ca.pem') }) }, token.io), 1);
      assert.match(token.stderr(), /TLS: EE_KEY_TOO_SMALL: the server certificate key is too small \(Node needs RSA 2048 bits or more; doctor names its size\); only the vendor can replace it/);
    } else {
      // A runtime that still accepts such a key (Node 22) connects.
      assert.equal(connect.ok, true, connect.detail);
    }
  });

  it('NO_PROXY=* beside HTTPS_PROXY: says every host goes direct (not "localhost is in NO_PROXY")', async (t) => {
    const sim = await startSim(t);
    const run = captureIo({ HTTPS_PROXY: 'http://127.0.0.1:9', NO_PROXY: '*' });
    assert.equal(await doctorCommand({ config: configFile({ baseUrl: sim.url.replace('127.0.0.1', 'localhost') }) }, run.io), 0, run.stdout());
    assert.match(run.stdout(), /✓ connect: direct \(NO_PROXY is \*, so every host goes direct\); localhost resolved to/);
  });

  it('a host that does not resolve: DNS failure', async () => {
    const out = await doctor({ config: configFile({ baseUrl: 'https://nonexistent.invalid' }) });
    assert.equal(out.code, 1);
    assert.match(line(out.lines, 'connect'), /^✗ connect: DNS lookup of nonexistent\.invalid failed \(\w+\) — hint: check the host name in service\.baseUrl/);
  });

  it('a plain-HTTP port: TLS handshake failed over https://, no TLS step with allowInsecureHttp', async (t) => {
    const server = createHttpServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url === '/pub/b2b/v1/auth/gentoken' ? JSON.stringify({ token: 'plain-token-1234', refreshToken: null, aliveSecondsTtl: 60 }) : '{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.after(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }));
    const { port } = server.address() as { port: number };
    const tlsToPlain = await doctor({ config: configFile({ baseUrl: `https://127.0.0.1:${port}` }) });
    assert.equal(tlsToPlain.code, 1);
    assert.match(line(tlsToPlain.lines, 'connect'), /port \d+ open; TLS handshake failed \(\w+\) — hint: the port may not speak TLS/);
    const plain = await doctor({ config: configFile({ baseUrl: `http://127.0.0.1:${port}`, allowInsecureHttp: true }), probe: '/x' });
    assert.equal(plain.code, 0, plain.stdout);
    assert.match(line(plain.lines, 'connect'), /^✓ connect: TCP 127\.0\.0\.1 port \d+ open; no TLS \(http:\/\/, service\.allowInsecureHttp\)$/);
    assertNoSecrets(plain.stdout, 'plain-token-1234');
  });

  it('a port nobody listens on: TCP refused', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const out = await doctor({ config: configFile({ baseUrl: `https://127.0.0.1:${port}` }) });
    assert.equal(out.code, 1);
    assert.match(line(out.lines, 'connect'), new RegExp(`TCP connection to 127\\.0\\.0\\.1 port ${port} refused \\(ECONNREFUSED\\) — hint: nothing listens there: check the port in service\\.baseUrl`));
  });
});

describe('doctor: gentoken step', () => {
  it('a baseUrl whose gentoken path 404s: hint that baseUrl is the API root without /pub/b2b/v1', async (t) => {
    const sim = await startSim(t);
    const out = await doctor({ config: configFile({ baseUrl: `${sim.url}/api` }), json: true });
    assert.equal(out.code, 1);
    const gentoken = out.steps.find((s) => s.step === 'gentoken')!;
    assert.equal(gentoken.url, `${sim.url}/api/pub/b2b/v1/auth/gentoken`);
    assert.equal(gentoken.status, 404);
    assert.match(gentoken.hint!, /service\.baseUrl must be the API root, without \/pub\/b2b\/v1/);
  });

  // Called directly: check-config is to refuse such a baseUrl, so the doctor command
  // would stop at step 1; the gentoken step must still explain what the doubled path causes.
  async function gentokenStep(t: TestContext, url: string) {
    const baseUrl = `${url}/pub/b2b/v1`;
    const client = createTokenClient({ baseUrl, ca: loadTrustedCas(tls.caFile), timeoutMs: 5000 });
    t.after(() => client.close());
    const { step, result } = await checkGentoken(client, { ...CREDENTIALS, version: 1 }, { baseUrl });
    assert.equal(result, undefined);
    assert.equal(step.ok, false);
    assert.equal(step.url, `${url}/pub/b2b/v1/pub/b2b/v1/auth/gentoken`);
    assert.match(step.hint!, /without \/pub\/b2b\/v1 \(the sidecar adds it\): remove \/pub\/b2b\/v1 from it/);
    return step;
  }

  it('a baseUrl ending in /pub/b2b/v1 on a service that answers 404: the hint says to remove it', async (t) => {
    const server = await startGentokenServer(() => ({ status: 404, body: { message: 'not found' } }));
    t.after(() => server.close());
    assert.equal((await gentokenStep(t, server.url)).status, 404);
  });

  it('a baseUrl ending in /pub/b2b/v1 on a service that checks the token first (401): the same hint', async (t) => {
    // The simulator, like many gateways, authenticates /pub/b2b/v1/* before routing.
    const sim = await startSim(t);
    const step = await gentokenStep(t, sim.url);
    assert.equal(step.status, 401);
    assert.match(step.detail, /→ 401: missing token/);
  });

  it('a wrong password: 401 with the server\'s message', async (t) => {
    const sim = await startSim(t, { password: 'another-password-123' });
    const out = await doctor({ config: configFile({ baseUrl: sim.url }) });
    assert.equal(out.code, 1);
    const gentoken = line(out.lines, 'gentoken');
    assert.match(gentoken, new RegExp(`^✗ gentoken: POST ${sim.url}/pub/b2b/v1/auth/gentoken → 401: \\S`));
    assert.match(gentoken, /hint: the service rejected credentials\.apiKey or credentials\.password/);
    assert.equal(sim.stats.apiRequests, 0, 'nothing after the failing step');
    assertNoSecrets(out.stdout);
  });

  it('a redirect: says where to, and does not follow it', async (t) => {
    const server = await startGentokenServer(() => ({ status: 307, headers: { location: 'https://elsewhere.example/api/pub/b2b/v1/auth/gentoken?x=1' } }));
    t.after(() => server.close());
    const out = await doctor({ config: configFile({ baseUrl: server.url }), json: true });
    assert.equal(out.code, 1);
    const gentoken = out.steps.find((s) => s.step === 'gentoken')!;
    assert.equal(gentoken.status, 307);
    assert.match(gentoken.detail, /→ 307 redirect to https:\/\/elsewhere\.example\/api\/pub\/b2b\/v1\/auth\/gentoken \(not followed/);
    assert.match(gentoken.hint!, /set service\.baseUrl/);
    assert.equal(server.requests.length, 1, 'the password went to one place only');
  });
});

describe('doctor: probe and discover-attach', () => {
  it('a probe the service refuses: ✗ with "try --discover-attach"', async (t) => {
    const sim = await startSim(t, { tokenIn: parseTokenIn('header:AuthToken+apikey') });
    const out = await doctor({ config: configFile({ baseUrl: sim.url }), probe: OBJECT_PATH });
    assert.equal(out.code, 1);
    const probe = line(out.lines, 'probe');
    assert.match(probe, /^✗ probe: GET .* with token\.attach → 401: /);
    assert.ok(probe.endsWith('hint: the service does not accept the token as attached: try --discover-attach'), probe);
  });

  it('a probe path the service does not know: ✗ naming --probe', async (t) => {
    const sim = await startSim(t);
    const out = await doctor({ config: configFile({ baseUrl: sim.url }), probe: '/pub/b2b/v1/nothing-here' });
    assert.equal(out.code, 1);
    assert.match(line(out.lines, 'probe'), /→ 404.*hint: either --probe names nothing that exists/);
  });

  const presentations: Array<[spec: string, label: string, attach: Array<Record<string, string>>]> = [
    ['header:Authorization:Bearer', 'Authorization: Bearer {token}', [{ in: 'header', name: 'Authorization', value: 'Bearer {token}' }]],
    ['header:Authorization', 'Authorization: {token}', [{ in: 'header', name: 'Authorization', value: '{token}' }]],
    ['header:AuthToken', 'AuthToken: {token}', [{ in: 'header', name: 'AuthToken', value: '{token}' }]],
    ['header:Token', 'Token: {token}', [{ in: 'header', name: 'Token', value: '{token}' }]],
    ['header:X-Auth-Token', 'X-Auth-Token: {token}', [{ in: 'header', name: 'X-Auth-Token', value: '{token}' }]],
    ['query:token', '?token={token}', [{ in: 'query', name: 'token', value: '{token}' }]],
  ];
  const API_KEY = { in: 'header', name: 'ApiKey', value: '{apiKey}' };
  for (const [spec, label, attach] of presentations) {
    for (const withApiKey of [true, false]) {
      const simSpec = withApiKey ? `${spec}+apikey` : spec;
      it(`discovers a service that accepts only ${simSpec}, and the printed block works`, async (t) => {
        const sim = await startSim(t, { tokenIn: parseTokenIn(simSpec) });
        // The default attach is right only for the simulator's default, so the probe may fail first.
        const config = configFile({ baseUrl: sim.url });
        const out = await doctor({ config, probe: OBJECT_PATH, discoverAttach: true, json: true });
        const discover = out.steps.find((s) => s.step === 'discover-attach');
        assert.ok(discover, out.stdout);
        assert.equal(discover.ok, true, discover.detail);
        assert.ok(sim.stats.apiRequests <= 1 + MAX_DISCOVERY_REQUESTS, 'bounded');
        if (spec === 'header:Authorization:Bearer') {
          // The default token.attach already works: nothing to paste.
          assert.equal(discover.result, 'configured');
          assert.equal(out.code, 0);
          return;
        }
        assert.equal(discover.result, 'found');
        assert.deepEqual(discover.accepted, [label]);
        assert.deepEqual(discover.attach, [...attach, API_KEY]);
        const tried = discover.tried!.find((tr) => tr.label === `${label} without ApiKey`);
        assert.equal(tried?.status === 200, !withApiKey, 'whether the ApiKey is needed is reported');

        // The text form prints the same block after a header line; it loads as a config.
        const text = await doctor({ config, probe: OBJECT_PATH, discoverAttach: true });
        const header = text.lines.indexOf('Paste into the config file (replacing token.attach):');
        assert.ok(header > 0, text.stdout);
        const block = text.lines.slice(header + 1).join('\n');
        assert.equal(`${block}\n`, discover.attachYaml);
        const pasted = join(dir, `pasted-${configs}.yaml`);
        writeFileSync(pasted, `${stringify({ service: { baseUrl: sim.url, caFile: tls.caFile }, credentials: CREDENTIALS, ...FREE_PORTS })}${block}\n`);
        const loaded = await loadConfig(pasted, {});
        assert.deepEqual(loaded.token.attach, discover.attach);
        // With the pasted block, the probe passes and doctor exits 0.
        const fixed = await doctor({ config: pasted, probe: OBJECT_PATH });
        assert.equal(fixed.code, 0, fixed.stdout);
        assertNoSecrets(out.stdout + text.stdout + fixed.stdout);
      });
    }
  }

  it('reports none accepted when the service refuses every presentation', async (t) => {
    const upstream = await startUpstream((_req, res) => {
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end('{"message":"forbidden"}');
    });
    t.after(() => upstream.close());
    const out = await doctor({ config: configFile({ baseUrl: upstream.url }), probe: '/x', discoverAttach: true, json: true, sleep: async () => undefined });
    assert.equal(out.code, 1);
    const discover = out.steps.find((s) => s.step === 'discover-attach')!;
    assert.equal(discover.ok, false);
    assert.equal(discover.result, 'none');
    assert.deepEqual(discover.accepted, []);
    assert.match(discover.detail, /tried 32 presentations; none is accepted\. Without a token the service answers 403/);
    assert.equal(upstream.seen.length, 1 + 2 + 32, 'the probe, two baselines, 16 presentations with and without the ApiKey, one after another');
    assert.ok(upstream.seen.every((r) => r.method === 'GET'));
  });
});

describe('doctor through the built CLI', () => {
  it('is listed in --help and runs from the bundle: discovery against `simulate --token-in`, exit codes 1 and 2', async (t) => {
    const help = await runCli(['--help']);
    assert.match(help.stdout, /\bdoctor\b/);

    const sim = spawnCli(['simulate', '--port', '0', '--token-in', 'header:X-Auth-Token+apikey', '--api-key', CREDENTIALS.apiKey, '--password', CREDENTIALS.password]);
    t.after(async () => { sim.child.kill('SIGTERM'); await sim.exited; });
    const [, url] = await sim.waitFor(/listening on (https:\/\/\S+)/);
    const [, caFile] = await sim.waitFor(/CA certificate: (\S+)/);
    const config = configFile({ baseUrl: url, caFile });
    const out = await runCli(['doctor', '--config', config, '--probe', '/pub/b2b/v1/objects/1', '--discover-attach', '--discovery-rate', '1000', '--json']);
    assert.equal(out.code, 0, out.stderr);
    const steps = JSON.parse(out.stdout) as DoctorStep[];
    assert.deepEqual(steps.map((s) => [s.step, s.ok]), [['config', true], ['listen', true], ['connect', true], ['gentoken', true], ['probe', false], ['discover-attach', true]]);
    assert.deepEqual(steps[5]!.accepted, ['X-Auth-Token: {token}']);
    assert.equal(steps[5]!.result, 'found');
    assertNoSecrets(out.stdout + out.stderr);

    const usage = await runCli(['doctor', '--config', config, '--discover-attach']);
    assert.equal(usage.code, 2);
  });
});
