import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { SecretSet } from '../../src/shared/secrets.js';
import { ClientGone } from '../../src/upstream/engine.js';
import { openUpstream, UpstreamOpenError, type UpstreamDeps } from '../../src/upstream/open-upstream.js';
import type { UpstreamSettings } from '../../src/shared/upstream-keys.js';
import { createClientCa } from '../helpers/client-certs.js';
import { testTls } from '../helpers/tls.js';

/**
 * openUpstream against a real HTTPS server that requires a client certificate (node:https with
 * requestCert), trusted through the test CA passed as `caFile`, as production passes it.
 */
const dir = mkdtempSync(join(tmpdir(), 'b2b-open-upstream-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const path = join(dir, name);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
};

const transport = { maxSockets: 1, keepAliveTimeoutMs: 1000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000 };

describe('openUpstream', () => {
  let server: Server;
  let settings: UpstreamSettings;
  before(async () => {
    const tls = await testTls();
    const clients = await createClientCa();
    const pair = await clients.issue('upstream-client');
    server = createServer({ cert: tls.certPem, key: tls.keyPem, ca: clients.caPem, requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const peer = (req.socket as TLSSocket).getPeerCertificate();
      res.end(`hello ${peer.subject.CN}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    settings = {
      baseUrl: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
      caFile: tls.caFile, allowInsecureHttp: false, timeoutMs: 5000, proxy: 'none',
      certFile: file('client.pem', pair.certPem), keyFile: file('client.key', pair.keyPem),
    };
  });
  after(() => server.close());

  const deps = (): UpstreamDeps & { calls: string[] } => {
    const calls: string[] = [];
    return {
      env: {}, secrets: new SecretSet(), watch: true, calls,
      metrics: {
        egressProxyFailed: (route, reason) => calls.push(`failed ${route} ${reason}`),
        egressProxyInUse: (route) => calls.push(`proxy ${route}`),
        clientCertificate: (route, notAfter) => calls.push(`certificate ${route} ${notAfter() instanceof Date}`),
      },
    };
  };

  it('opens the CA, the client certificate and an engine that reach the server; closes them all once, newest first', async () => {
    const d = deps();
    const upstream = await openUpstream('service', settings, d);
    assert.equal(upstream.ca?.file, settings.caFile);
    assert.equal(upstream.egress.certificate()?.subject, 'CN=upstream-client');
    assert.deepEqual(d.calls, ['certificate service true'], 'the certificate gauge is registered; no proxy, so no proxy series');

    const engine = await upstream.engine('undici', transport);
    const answer = await engine.send({ method: 'GET', path: '/', headers: { host: new URL(settings.baseUrl).host }, body: undefined, signal: new ClientGone() });
    assert.equal(answer.status, 200);
    assert.equal((await answer.body.readAll(1024))?.toString(), 'hello upstream-client', 'the server saw the client certificate over the trusted chain');

    const closed: string[] = [];
    upstream.adopt({ close: async () => { closed.push('first client'); } });
    upstream.adopt({ close: () => { closed.push('second client'); } });
    const egressClose = upstream.egress.close.bind(upstream.egress);
    (upstream.egress as { close(): void }).close = () => {
      closed.push('egress');
      egressClose();
    };
    await Promise.all([upstream.close(), upstream.close()]);
    await upstream.close();
    assert.deepEqual(closed, ['second client', 'first client', 'egress']);
    await assert.rejects(engine.send({ method: 'GET', path: '/', headers: { host: new URL(settings.baseUrl).host }, body: undefined, signal: new ClientGone() }), 'the engine was closed with it');
  });

  it('closes the rest when one close fails, then reports the failure', async () => {
    const upstream = await openUpstream('localization', { ...settings, certFile: undefined, keyFile: undefined }, { env: {}, secrets: new SecretSet() });
    const closed: string[] = [];
    upstream.adopt({ close: () => { closed.push('a'); } });
    upstream.adopt({ close: () => Promise.reject(new Error('pool stuck')) });
    upstream.adopt({ close: () => { closed.push('c'); } });
    await assert.rejects(upstream.close(), /pool stuck/);
    assert.deepEqual(closed, ['c', 'a']);
  });

  it('says which part cannot be used, the CA file or the way out, and leaves nothing open', async () => {
    const notPem = file('not-a-ca.pem', 'hello');
    await assert.rejects(openUpstream('service', { ...settings, caFile: notPem }, deps()), (err: unknown) => {
      assert.ok(err instanceof UpstreamOpenError);
      assert.equal(err.stage, 'ca');
      assert.ok(err.message.includes(notPem), err.message);
      return true;
    });
    const d = deps();
    await assert.rejects(openUpstream('localization', { ...settings, keyFile: join(dir, 'missing.key') }, d), (err: unknown) => {
      assert.ok(err instanceof UpstreamOpenError);
      assert.equal(err.stage, 'egress');
      assert.match(err.message, /localization\.keyFile/);
      return true;
    });
    assert.deepEqual(d.calls, [], 'no gauge registered for an upstream that never opened');
  });

  it('registers the proxy series when the way out is a forward proxy', async () => {
    const d = deps();
    const upstream = await openUpstream('service', { ...settings, certFile: undefined, keyFile: undefined, proxy: 'http://127.0.0.1:9' }, d);
    try {
      assert.ok(upstream.egress.egress.proxy, 'the egress has the proxy');
      assert.deepEqual(d.calls, ['certificate service false', 'proxy service']);
    } finally {
      await upstream.close();
    }
  });
});

describe('the one way to open an upstream', () => {
  it('is openUpstream: no other file of src/ loads a CA or starts an egress itself', () => {
    const src = fileURLToPath(new URL('../../src/', import.meta.url));
    const callers = readdirSync(src, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .filter((f) => /\b(loadTrustedCas|startEgress)\(/.test(readFileSync(join(src, f), 'utf8').replace(/export (async )?function (loadTrustedCas|startEgress)\(/g, '')))
      .map((f) => relative(src, join(src, f)));
    // The one other: the fleet store's Redis connection (docs/fleet.md), no upstream of the proxy, trusting fleet.redisCaFile through the same shared/tls.ts.
    assert.deepEqual(callers, ['fleet/redis-store.ts', 'upstream/open-upstream.ts']);
  });
});
