import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { assertBuildIsCurrent, runCli } from '../helpers/cli.js';
import { createClientCa, encryptKey, type ClientCa } from '../helpers/client-certs.js';
import { startNginx, type RealNginx } from '../helpers/nginx.js';
import { ENGINES, send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * Mutual TLS against a real server that requires a client certificate: Debian's nginx with
 * `ssl_verify_client on`. It answers gentoken itself and echoes the subject of the certificate
 * each request presented; `keepalive_timeout 0` makes every request a new connection, so a
 * rotated pair shows on the next request.
 */
const TOKEN = 'tok-mtls-0123456789abcdef';
const dir = mkdtempSync(join(tmpdir(), 'b2b-mtls-'));
let n = 0;
const file = (name: string, text: string) => {
  const path = join(dir, `${++n}-${name}`);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
};

describe('client certificates against nginx with ssl_verify_client on', () => {
  let nginx: RealNginx;
  let ca: ClientCa;
  let one: { certPem: string; keyPem: string };
  let two: { certPem: string; keyPem: string };
  before(async () => {
    assertBuildIsCurrent();
    ca = await createClientCa();
    [one, two] = await Promise.all([ca.issue('client-one'), ca.issue('client-two')]);
    nginx = await startNginx({
      http: '',
      locations: `
    ssl_verify_client on;
    ssl_client_certificate ${file('client-ca.pem', ca.caPem)};
    keepalive_timeout 0;
    location = /pub/b2b/v1/auth/gentoken { return 200 '{"token":"${TOKEN}","refreshToken":null,"aliveSecondsTtl":900}'; }
    location / { return 200 '{"client":"$ssl_client_s_dn","authorization":"$http_authorization"}'; }`,
    });
  });
  after(() => nginx.stop());

  async function config(service: string): Promise<string> {
    const tls = await testTls();
    return file('sidecar.yaml', `service:\n  baseUrl: ${nginx.url}\n  caFile: ${tls.caFile}\n${service}credentials:\n  apiKey: api-key-0123456789\n  password: password-0123456789\n`);
  }
  const pair = (p: { certPem: string; keyPem: string }) => `  certFile: ${file('client.pem', p.certPem)}\n  keyFile: ${file('client.key', p.keyPem)}\n`;

  it('is refused without the pair and accepted with it (the token command)', async () => {
    const without = await runCli(['token', '--config', await config('')]);
    assert.equal(without.code, 1);
    assert.match(without.stderr, /400/);
    assert.equal(nginx.accessLog().at(-1)?.status, 400); // nginx: "No required SSL certificate was sent"
    const withPair = await runCli(['token', '--config', await config(pair(one))]);
    assert.equal(withPair.code, 0, withPair.stderr);
    assert.equal(withPair.stdout.trim(), TOKEN);
  });

  it('names the missing client certificate at run time: /readyz, the log and the token command, not a bare "HTTP 400"', async () => {
    const s = await startSidecar({ baseUrl: nginx.url });
    try {
      // Bounded: the first gentoken attempt fails at once (nginx answers 400 after the handshake).
      const deadline = Date.now() + 5000;
      while (!s.log.lines().some((l) => l.message === 'token request failed')) {
        assert.ok(Date.now() < deadline, 'no gentoken failure logged');
        await new Promise((r) => setTimeout(r, 10));
      }
      const ready = await send(s.adminPort, { path: '/readyz' });
      assert.equal(ready.status, 503);
      const message = ready.json<{ message: string }>().message;
      assert.match(message, /requires a client certificate \(mutual TLS\) and none was presented .*set service\.certFile and service\.keyFile/);
      assert.ok(readFileSync(new URL('../../docs/troubleshooting.md', import.meta.url), 'utf8').includes(message), 'docs/troubleshooting.md quotes it');
      const failed = s.log.lines().find((l) => l.message === 'token request failed');
      assert.equal(failed?.cause, 'http');
      assert.match(String(failed?.reason), /client certificate/);
      // A configuration problem: retried on the lockout-safe schedule (5 s on), not every second.
      assert.equal(failed?.level, 'error');
      assert.ok(Number(failed?.retryInSeconds) >= 5, `retry in ${String(failed?.retryInSeconds)} s`);
    } finally {
      await s.stop();
    }
    const cli = await runCli(['token', '--config', await config('')]);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /requires a client certificate \(mutual TLS\)/);
  });

  it('doctor\'s gentoken hint names the client certificate, not "retry later"', async () => {
    const doctor = await runCli(['doctor', '--config', await config('')]);
    assert.equal(doctor.code, 1);
    const gentoken = doctor.stdout.split('\n').find((l) => /gentoken/.test(l) && /400/.test(l));
    assert.ok(gentoken, doctor.stdout);
    assert.match(gentoken, /none was presented/);
    assert.match(gentoken, /set service\.certFile and service\.keyFile/);
    assert.doesNotMatch(gentoken, /retry later/);
  });

  it('names a client certificate the server does not accept (another CA) at run time', async () => {
    const stranger = await (await createClientCa('another CA')).issue('client-stranger');
    const s = await startSidecar({ baseUrl: nginx.url, overrides: { service: { certFile: file('stranger.pem', stranger.certPem), keyFile: file('stranger.key', stranger.keyPem) } } });
    try {
      const deadline = Date.now() + 5000;
      while (!s.log.lines().some((l) => l.message === 'token request failed')) {
        assert.ok(Date.now() < deadline, 'no gentoken failure logged');
        await new Promise((r) => setTimeout(r, 10));
      }
      const message = (await send(s.adminPort, { path: '/readyz' })).json<{ message: string }>().message;
      assert.match(message, /did not accept the client certificate presented/);
      assert.ok(readFileSync(new URL('../../docs/troubleshooting.md', import.meta.url), 'utf8').includes(message), 'docs/troubleshooting.md quotes it');
      assert.equal(nginx.accessLog().at(-1)?.status, 400);
    } finally {
      await s.stop();
    }
  });

  it('an encrypted key is read with keyPassphraseFile', async () => {
    const encrypted = `  certFile: ${file('client.pem', one.certPem)}\n  keyFile: ${file('client.key', encryptKey(one.keyPem, 'correct horse'))}\n`;
    const missing = await runCli(['check-config', '--config', await config(encrypted)]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr + missing.stdout, /service\.keyFile.*is encrypted: set service\.keyPassphraseFile/);
    const withPassphrase = await config(`${encrypted}  keyPassphraseFile: ${file('passphrase', 'correct horse\n')}\n`);
    assert.equal((await runCli(['check-config', '--config', withPassphrase])).code, 0);
    const token = await runCli(['token', '--config', withPassphrase]);
    assert.equal(token.code, 0, token.stderr);
    assert.ok(!(token.stdout + token.stderr).includes('correct horse'));
  });

  it('check-config refuses a key of another certificate and an expired certificate, naming the key and file', async () => {
    const mismatched = await runCli(['check-config', '--config', await config(`  certFile: ${file('one.pem', one.certPem)}\n  keyFile: ${file('two.key', two.keyPem)}\n`)]);
    assert.equal(mismatched.code, 2);
    assert.match(mismatched.stderr + mismatched.stdout, /service\.keyFile.*two\.key does not match the certificate in service\.certFile .*one\.pem/);
    // A complete leaf followed by a cut-off intermediate: refused now, not at the first handshake.
    const cut = `${one.certPem}${ca.caPem.slice(0, 300)}\n`;
    const truncated = await runCli(['check-config', '--config', await config(`  certFile: ${file('cut.pem', cut)}\n  keyFile: ${file('one.key', one.keyPem)}\n`)]);
    assert.equal(truncated.code, 2, truncated.stdout + truncated.stderr);
    assert.match(truncated.stderr + truncated.stdout, /service\.certFile.*cut\.pem/);
    const expired = await ca.issue('client-old', [-30, -1]);
    const old = await runCli(['check-config', '--config', await config(pair(expired))]);
    assert.equal(old.code, 2);
    assert.match(old.stderr + old.stdout, /service\.certFile.*the certificate expired on 20\d\d-/);
    // run reaches the same verdict.
    const run = await runCli(['run', '--config', await config(pair(expired))]);
    assert.equal(run.code, 2, run.stderr);
    assert.match(run.stderr + run.stdout, /the certificate expired on/);
  });

  it('doctor shows whether the server asked for a client certificate and which one was offered', async () => {
    const out = await runCli(['doctor', '--config', await config(pair(one))]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    assert.match(out.stdout, /✓ connect: .*the server asked for a client certificate: client certificate CN=client-one \(service\.certFile, valid to 20\d\d-[^)]+\) offered\n/);
    const without = await runCli(['doctor', '--config', await config('')]);
    assert.equal(without.code, 1);
    assert.match(without.stdout, /✓ connect: .*the server asked for a client certificate, and none is configured — hint: .*set service\.certFile and service\.keyFile/);
    assert.match(without.stdout, /✗ gentoken: .*400/);
    // A server that does not ask (the test CA's plain TLS server, the simulator) is told apart.
    const sim = await startSimulator();
    try {
      const plain = await runCli(['doctor', '--config', await config(pair(one)).then((f) => { writeFileSync(f, readFileSync(f, 'utf8').replace(nginx.url, sim.baseUrl)); return f; })]);
      assert.match(plain.stdout, /client certificate CN=client-one .* offered, but the server did not ask for one/);
    } finally {
      await sim.stop();
    }
  });

  for (const engine of ENGINES) {
    it(`${engine}: proxied requests present the pair; a rotated pair is used without a restart; a bad one is refused and the current kept`, async () => {
      const certFile = file('client.pem', one.certPem);
      const keyFile = file('client.key', one.keyPem);
      const s = await startSidecar({ baseUrl: nginx.url, engine, overrides: { service: { certFile, keyFile } } });
      try {
        await waitReady(s);
        const first = await send(s.port, { path: '/pub/b2b/v1/objects/1' });
        assert.equal(first.status, 200);
        assert.deepEqual(first.json(), { client: 'CN=client-one', authorization: `Bearer ${TOKEN}` });
        const notAfter = Math.floor(new Date(new X509Certificate(one.certPem).validTo).getTime() / 1000);
        assert.match(await s.sidecar.registry.metrics(), new RegExp(`^b2b_sidecar_client_certificate_expiry_timestamp_seconds\\{route="service"\\} ${notAfter}$`, 'm'));

        writeFileSync(certFile, two.certPem);
        writeFileSync(keyFile, two.keyPem);
        await s.sidecar.reloadCredentials();
        assert.equal((await send(s.port, { path: '/pub/b2b/v1/objects/2' })).json<{ client: string }>().client, 'CN=client-two');
        assert.ok(s.log.lines().some((l) => l.message === 'client certificate changed; new connections present it' && l.subject === 'CN=client-two'));

        // A half-finished rotation (new certificate, old key) is refused; the working pair stays.
        writeFileSync(certFile, one.certPem);
        await s.sidecar.reloadCredentials();
        assert.equal((await send(s.port, { path: '/pub/b2b/v1/objects/3' })).json<{ client: string }>().client, 'CN=client-two');
        const refused = s.log.lines().find((l) => l.message === 'client certificate re-read refused; keeping the current one');
        assert.match(String(refused?.reason), /service\.keyFile .* does not match the certificate in service\.certFile/);
      } finally {
        await s.stop();
      }
    });
  }
});
