import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request, type RequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { createSecureContext, rootCertificates } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { caCertificates, loadTrustedCas, pemCertificatesProblem, trustContext } from '../../src/shared/tls.js';
import { generateTlsMaterial } from '../../src/simulator/certs.js';
import { testTls } from '../helpers/tls.js';

const TLS_MODULE = fileURLToPath(new URL('../../src/shared/tls.ts', import.meta.url));

function get(port: number, secureContext: ReturnType<typeof trustContext>): Promise<number | string> {
  return new Promise<number | string>((resolve) => {
    const options: RequestOptions = { host: '127.0.0.1', port, servername: 'localhost', agent: false, ...(secureContext ? { secureContext } : {}) };
    const req = request(options, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    req.end();
  });
}

describe('trusted CAs', () => {
  it('adds caFile to the system roots instead of replacing them (docs/traps.md T10)', async () => {
    const tls = await testTls();
    const ca = loadTrustedCas(tls.caFile)!;
    assert.equal(ca.extraPem, tls.caPem);
    const list = caCertificates(ca);
    assert.equal(list.length, rootCertificates.length + 1);
    assert.deepEqual(list.slice(0, -1), [...rootCertificates]);
  });

  it('does not copy Node\'s roots into JavaScript strings at start-up (~300 KB held for the process\'s life)', async () => {
    const tls = await testTls();
    // tls.rootCertificates is a lazy getter that caches its array once read: a fresh process
    // shows whether loading CAs and building their context read it.
    const script = `
      const { loadTrustedCas, trustContext } = await import(${JSON.stringify(TLS_MODULE)});
      const { getHeapSnapshot } = await import('node:v8');
      trustContext(loadTrustedCas(${JSON.stringify(tls.caFile)}));
      let text = '';
      for await (const chunk of getHeapSnapshot()) text += chunk;
      // A line of a root certificate Node bundles (ISRG Root X1), assembled so this source does not hold it.
      process.stdout.write(String(text.includes(['MIIFazCCA1OgAwIBAgIRAIIQz7DSQONZRGPgu2OCiwAw', 'DQYJKoZIhvcNAQELBQAw'].join(''))));`;
    const control = `
      const { rootCertificates } = await import('node:tls');
      const { getHeapSnapshot } = await import('node:v8');
      const held = rootCertificates.length;
      let text = '';
      for await (const chunk of getHeapSnapshot()) text += chunk;
      process.stdout.write(String(held > 0 && text.includes(['MIIFazCCA1OgAwIBAgIRAIIQz7DSQONZRGPgu2OCiwAw', 'DQYJKoZIhvcNAQELBQAw'].join(''))));`;
    const run = (source: string) => execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], { encoding: 'utf8' });
    assert.equal(run(control), 'true', 'the probe finds the roots once tls.rootCertificates was read');
    assert.equal(run(script), 'false');
  });

  it('builds one context per CA list that trusts the extra CA, and only it beyond the roots', async () => {
    const tls = await testTls();
    const ca = loadTrustedCas(tls.caFile)!;
    assert.equal(trustContext(ca), trustContext(ca), 'built once');
    const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (_q, r) => r.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      assert.equal(await get(port, trustContext(ca)), 200);
      // Node's default store (the roots alone) does not trust the test CA.
      assert.equal(await get(port, createSecureContext()), 'UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    } finally {
      server.close();
    }
  });

  it('rejects a caFile without a PEM certificate', async () => {
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const file = join(mkdtempSync(join(tmpdir(), 'b2b-ca-')), 'ca.pem');
    writeFileSync(file, 'not a certificate');
    assert.throws(() => loadTrustedCas(file), /no PEM certificate/);
  });

  it('parses every PEM block: armour around a key, garbage or a second bad block is refused', async () => {
    const tls = await testTls();
    assert.equal(pemCertificatesProblem(tls.caPem), undefined);
    // The system roots (Node's own bundle, Mozilla's CA list) as one bundle file: every one parses.
    assert.equal(pemCertificatesProblem(rootCertificates.join('\n')), undefined);
    const keyAsCert = tls.keyPem.replace(/-----(BEGIN|END) [A-Z ]*PRIVATE KEY-----/g, '-----$1 CERTIFICATE-----');
    assert.match(pemCertificatesProblem(keyAsCert) ?? '', /^holds PEM armour, but its certificate is not an X\.509 certificate/);
    assert.match(pemCertificatesProblem(tls.keyPem) ?? '', /^holds no PEM certificate/);
    assert.match(pemCertificatesProblem(`${tls.caPem}\n${keyAsCert}`) ?? '', /certificate 2 of 2 is not an X\.509 certificate/);
    const truncated = tls.caPem.replace(/\n[A-Za-z0-9+/=]+\n-----END/, '\n-----END');
    assert.notEqual(truncated, tls.caPem);
    assert.match(pemCertificatesProblem(truncated) ?? '', /is not an X\.509 certificate/);
  });
});

describe('a CA bundle made with cat', () => {
  it('refuses a certificate glued to the end of the one before it, which OpenSSL skips without a word (docs/traps.md T103)', async () => {
    const first = await testTls();
    const second = await generateTlsMaterial(['localhost', '127.0.0.1']);
    // first.caPem has no newline after its END line: what `cat first.pem second.pem` gives then.
    assert.ok(!first.caPem.endsWith('\n'));
    const glued = first.caPem + second.caPem;
    // What OpenSSL makes of it: the second CA is not trusted (a server of that CA is refused).
    const server = createServer({ cert: second.certPem, key: second.keyPem }, (_q, r) => r.end('ok'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      assert.equal(await get(port, createSecureContext({ ca: glued })), 'UNABLE_TO_VERIFY_LEAF_SIGNATURE');
      assert.equal(await get(port, createSecureContext({ ca: `${first.caPem}\n${second.caPem}` })), 200, 'with the line break both are trusted');
      // A byte-order mark before the file (Notepad) is taken; an indented BEGIN line is not.
      assert.equal(await get(port, createSecureContext({ ca: `\uFEFF${second.caPem}` })), 200);
      assert.equal(await get(port, createSecureContext({ ca: `  ${second.caPem}` })), 'UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    } finally {
      server.close();
    }
    assert.match(pemCertificatesProblem(glued) ?? '', /^holds certificate 2 of 2 with its -----BEGIN CERTIFICATE----- not at the start of a line .*OpenSSL would skip it/);
    assert.equal(pemCertificatesProblem(`${first.caPem}\n${second.caPem}`), undefined);
    assert.equal(pemCertificatesProblem(`${first.caPem}\r\n${second.caPem}\r\n`), undefined, 'CRLF line ends');
    assert.equal(pemCertificatesProblem(`\uFEFF${second.caPem}`), undefined);
    assert.match(pemCertificatesProblem(`  ${second.caPem}`) ?? '', /^holds certificate 1 of 1 with its -----BEGIN CERTIFICATE----- not at the start of a line/);
    const file = join(mkdtempSync(join(tmpdir(), 'b2b-ca-')), 'bundle.pem');
    writeFileSync(file, glued);
    assert.throws(() => loadTrustedCas(file), /bundle\.pem holds certificate 2 of 2 with its -----BEGIN CERTIFICATE----- not at the start of a line/);
  });
});

describe('trusted CAs with NODE_EXTRA_CA_CERTS', () => {
  it('keeps the CAs Node was started with besides caFile\'s (adding a CA used to drop them)', async () => {
    const viaFile = await testTls();
    const viaEnv = await generateTlsMaterial(['localhost', '127.0.0.1']);
    const dir = mkdtempSync(join(tmpdir(), 'b2b-extra-ca-'));
    const envCa = join(dir, 'extra-ca.pem');
    writeFileSync(envCa, viaEnv.caPem);
    const servers = await Promise.all([viaFile, viaEnv].map(async (m) => {
      const server = createServer({ cert: m.certPem, key: m.keyPem }, (_q, r) => r.end('ok'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      return server;
    }));
    try {
      const [filePort, envPort] = servers.map((s) => (s.address() as AddressInfo).port);
      // A fresh process: Node reads NODE_EXTRA_CA_CERTS when it starts.
      const script = `
        const { request } = await import('node:https');
        const { loadTrustedCas, trustContext } = await import(${JSON.stringify(TLS_MODULE)});
        const secureContext = trustContext(loadTrustedCas(${JSON.stringify(viaFile.caFile)}));
        const get = (port) => new Promise((resolve) => {
          const req = request({ host: '127.0.0.1', port, servername: 'localhost', agent: false, secureContext }, (res) => { res.resume(); resolve(res.statusCode); });
          req.on('error', (err) => resolve(err.code));
          req.end();
        });
        process.stdout.write(JSON.stringify([await get(${filePort}), await get(${envPort})]));`;
      // Asynchronously: the servers answer from this process.
      const { stdout: out } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', env: { ...process.env, NODE_EXTRA_CA_CERTS: envCa } });
      assert.deepEqual(JSON.parse(out), [200, 200], 'caFile\'s CA, then the NODE_EXTRA_CA_CERTS one');
    } finally {
      for (const server of servers) server.close();
    }
  });
});
