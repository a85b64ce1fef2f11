import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startEgress } from '../../src/upstream/egress-settings.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { createClientCa } from '../helpers/client-certs.js';

/** A proxy that grants every CONNECT and records the Proxy-Authorization it was sent. */
async function recordingProxy(): Promise<{ port: number; seen: string[]; close(): void }> {
  const seen: string[] = [];
  const server = createServer((socket) => {
    let head = '';
    socket.on('data', (d) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      const auth = /^Proxy-Authorization: Basic (\S+)\r$/m.exec(head)?.[1];
      seen.push(auth ? Buffer.from(auth, 'base64').toString('utf8') : '');
      socket.end('HTTP/1.1 200 Connection established\r\n\r\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, seen, close: () => server.close() };
}

describe('proxy credentials from proxyAuthFile', () => {
  it('are re-read like the credential files: new tunnels use the new ones, a refused file keeps the current, none is logged', async () => {
    const proxy = await recordingProxy();
    const dir = mkdtempSync(join(tmpdir(), 'b2b-proxy-auth-'));
    const file = join(dir, 'proxy-auth');
    writeFileSync(file, 'svc:first-proxy-pass\n');
    const log = createCaptureLogger();
    const handle = await startEgress({ proxy: `http://url-user:url-pass-123@127.0.0.1:${proxy.port}`, proxyAuthFile: file }, {
      route: 'service', target: new URL('https://api.example.com'), ca: undefined, env: {}, secrets: log.secrets, logger: log.logger,
    });
    try {
      assert.equal(handle.path, `via proxy http://***:***@127.0.0.1:${proxy.port} (service.proxy)`);
      (await handle.egress.tunnel('api.example.com', 443)).destroy();
      writeFileSync(file, 'svc:second-proxy-pass\n');
      await handle.reload();
      (await handle.egress.tunnel('api.example.com', 443)).destroy();
      writeFileSync(file, 'no colon here\n');
      await handle.reload();
      (await handle.egress.tunnel('api.example.com', 443)).destroy();
      // The file replaces the URL's user; a refused re-read keeps the second pair.
      assert.deepEqual(proxy.seen, ['svc:first-proxy-pass', 'svc:second-proxy-pass', 'svc:second-proxy-pass']);
      assert.ok(log.lines().some((l) => l.message === 'proxy credentials changed; new tunnels use them'));
      const refused = log.lines().find((l) => l.message === 'proxy credential re-read refused; keeping the current ones');
      assert.match(String(refused?.reason), /service\.proxyAuthFile .* must hold user:password/);
      // Every form a log line could carry is scrubbed.
      log.logger.warn(`echo first-proxy-pass second-proxy-pass url-pass-123 ${Buffer.from('svc:second-proxy-pass').toString('base64')}`);
      assert.ok(!/first-proxy-pass|second-proxy-pass|url-pass-123|c3ZjOnNlY29uZC1wcm94eS1wYXNz/.test(log.text()), log.text());
    } finally {
      handle.close();
      proxy.close();
    }
  });
});

describe('client certificate rotation, one file after the other (docs/runbook.md order: key, then certificate)', () => {
  /** Polls `ok` (bounded, generous for a loaded machine). */
  async function until(ok: () => boolean, what: string): Promise<void> {
    for (let i = 0; i < 1000 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(ok(), what);
  }

  async function rotating(pairGraceMs: number) {
    const ca = await createClientCa();
    const [one, two] = await Promise.all([ca.issue('client-one'), ca.issue('client-two')]);
    const dir = mkdtempSync(join(tmpdir(), 'b2b-pair-'));
    const certFile = join(dir, 'client.pem');
    const keyFile = join(dir, 'client.key');
    writeFileSync(certFile, one.certPem);
    writeFileSync(keyFile, one.keyPem, { mode: 0o600 });
    const log = createCaptureLogger();
    const handle = await startEgress({ certFile, keyFile }, {
      route: 'service', target: new URL('https://api.example.com'), ca: undefined, env: {}, secrets: log.secrets, logger: log.logger, watch: true, pairGraceMs,
    });
    const messages = () => log.lines().map((l) => String(l.message));
    return { one, two, certFile, keyFile, log, handle, messages };
  }

  it('the key written first: no warning in between, the new pair once the certificate follows', async (t) => {
    const r = await rotating(60_000);
    t.after(() => r.handle.close());
    writeFileSync(r.keyFile, r.two.keyPem);
    await until(() => r.messages().includes('client certificate re-read refused for now; waiting for the other file of the pair'), 'the half-rotated pair was seen');
    assert.equal(r.handle.certificate()?.subject, 'CN=client-one', 'the current pair stays meanwhile');
    writeFileSync(r.certFile, r.two.certPem);
    await until(() => r.messages().includes('client certificate changed; new connections present it'), 'the new pair was taken');
    assert.equal(r.handle.certificate()?.subject, 'CN=client-two');
    assert.ok(!r.log.lines().some((l) => l.level === 'warn'), r.log.text());
  });

  it('a pair that still does not match after the grace is reported, and the current pair kept', async (t) => {
    const r = await rotating(300);
    t.after(() => r.handle.close());
    writeFileSync(r.keyFile, r.two.keyPem);
    await until(() => r.messages().includes('client certificate re-read refused; keeping the current one'), 'the refusal was reported');
    const refused = r.log.lines().find((l) => l.message === 'client certificate re-read refused; keeping the current one');
    assert.match(String(refused?.reason), /service\.keyFile .* does not match the certificate in service\.certFile/);
    assert.equal(r.handle.certificate()?.subject, 'CN=client-one');
  });

  it('an explicit re-read (SIGHUP) reports a refused pair at once', async (t) => {
    const r = await rotating(60_000);
    t.after(() => r.handle.close());
    writeFileSync(r.certFile, r.two.certPem);
    await r.handle.reload();
    assert.ok(r.messages().includes('client certificate re-read refused; keeping the current one'), r.log.text());
  });
});
