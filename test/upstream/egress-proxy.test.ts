import assert from 'node:assert/strict';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, it } from 'node:test';
import { noProxyMatches, parseProxyUrl, resolveEgress } from '../../src/shared/egress-proxy.js';
import { EgressProxyError, openTunnel } from '../../src/upstream/connect-tunnel.js';

const SERVICE = new URL('https://api.vendor.example:8443/b2b');

describe('which proxy carries an upstream (curl\'s and Go\'s rules)', () => {
  it('an explicit setting wins over the environment; none means direct', () => {
    const env = { HTTPS_PROXY: 'http://env-proxy:3128' };
    assert.equal(resolveEgress('http://set:8080', 'service.proxy', SERVICE, env).proxy?.host, 'set');
    assert.deepEqual(resolveEgress('none', 'service.proxy', SERVICE, env), { direct: 'service.proxy is none' });
    assert.equal(resolveEgress(undefined, 'service.proxy', SERVICE, env).proxy?.source, 'HTTPS_PROXY');
    assert.deepEqual(resolveEgress(undefined, 'service.proxy', SERVICE, {}), { direct: 'no service.proxy, no HTTPS_PROXY in the environment' });
  });

  it('the lower-case variable wins (curl, Python); http:// upstreams read http_proxy', () => {
    const env = { HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:2', http_proxy: 'http://plain:3' };
    assert.equal(resolveEgress(undefined, 'k', SERVICE, env).proxy?.host, 'lower');
    assert.equal(resolveEgress(undefined, 'k', new URL('http://127.0.0.1:8080'), env).proxy?.host, 'plain');
    // An empty lower-case variable does not hide the upper-case one.
    assert.equal(resolveEgress(undefined, 'k', SERVICE, { https_proxy: '', HTTPS_PROXY: 'http://upper:1' }).proxy?.host, 'upper');
  });

  it('NO_PROXY: names with their subdomains, leading dots, *, IPs, CIDRs, ports', () => {
    const cases: Array<[string, string, boolean]> = [
      ['vendor.example', 'https://api.vendor.example', true],
      ['.vendor.example', 'https://api.vendor.example', true],
      ['*.vendor.example', 'https://vendor.example', true],
      ['vendor.example', 'https://notvendor.example', false],
      ['API.Vendor.Example', 'https://api.vendor.example', true],
      ['*', 'https://anything.example', true],
      ['10.0.0.0/8', 'https://10.1.2.3', true],
      ['10.0.0.0/8', 'https://11.1.2.3', false],
      ['10.0.0.0/8', 'https://ten.example', false],
      ['192.168.1.5', 'https://192.168.1.5:9443', true],
      ['::1', 'https://[::1]:9443', true],
      ['[::1]:9443', 'https://[::1]:9443', true],
      ['fd00::/8', 'https://[fd12::1]', true],
      ['api.vendor.example:8443', 'https://api.vendor.example:8443', true],
      ['api.vendor.example:443', 'https://api.vendor.example:8443', false],
      ['api.vendor.example:443', 'https://api.vendor.example', true],
      ['localhost, 127.0.0.1 vendor.example', 'https://api.vendor.example', true],
      ['', 'https://api.vendor.example', false],
    ];
    for (const [list, url, expected] of cases) assert.equal(noProxyMatches(list, new URL(url)), expected, `${list} vs ${url}`);
    const env = { HTTPS_PROXY: 'http://p:1', no_proxy: 'vendor.example' };
    assert.deepEqual(resolveEgress(undefined, 'k', SERVICE, env), { direct: 'api.vendor.example matches vendor.example in no_proxy' });
    // Said as the entry says it: `*` is every host, not "the host is in the list".
    assert.deepEqual(resolveEgress(undefined, 'k', SERVICE, { HTTPS_PROXY: 'http://p:1', NO_PROXY: '*' }), { direct: 'NO_PROXY is *, so every host goes direct' });
    assert.deepEqual(resolveEgress(undefined, 'k', SERVICE, { HTTPS_PROXY: 'http://p:1', NO_PROXY: 'localhost,API.vendor.example' }), { direct: 'api.vendor.example is in NO_PROXY' });
    assert.deepEqual(resolveEgress(undefined, 'k', new URL('https://10.1.2.3'), { HTTPS_PROXY: 'http://p:1', NO_PROXY: '10.0.0.0/8' }), { direct: '10.1.2.3 matches 10.0.0.0/8 in NO_PROXY' });
    // An explicit setting is explicit: NO_PROXY belongs to the environment's proxy.
    assert.equal(resolveEgress('http://p:1', 'k', SERVICE, env).proxy?.host, 'p');
  });

  it('parses proxy URLs as curl does, masks the user name and the password, refuses what it cannot use', () => {
    const p = parseProxyUrl('http://us%40er:pa%3Ass@squid.corp:3128', 'service.proxy');
    assert.deepEqual(p, { host: 'squid.corp', port: 3128, display: 'http://***:***@squid.corp:3128', source: 'service.proxy', urlAuth: 'us@er:pa:ss' });
    // A provider that puts a key in the user field: it never shows.
    assert.equal(parseProxyUrl('http://key-in-user-field-123@squid.corp:3128', 'HTTPS_PROXY').display, 'http://***@squid.corp:3128');
    // A malformed % escape names where the URL came from, not just "URI malformed".
    assert.throws(() => parseProxyUrl('http://user:50%off@squid.corp:3128', 'HTTPS_PROXY'), /^Error: HTTPS_PROXY: the user name or password has a malformed % escape/);
    assert.equal(parseProxyUrl('squid.corp:3128', 'HTTPS_PROXY').port, 3128);
    assert.equal(parseProxyUrl('http://squid.corp', 'HTTPS_PROXY').port, 80);
    assert.equal(parseProxyUrl('http://[fd00::1]:3128', 'k').host, 'fd00::1');
    assert.throws(() => parseProxyUrl('https://squid:3128', 'service.proxy'), /service\.proxy: only an http:\/\/ proxy is supported/);
    assert.throws(() => parseProxyUrl('socks5://squid:1080', 'HTTPS_PROXY'), /HTTPS_PROXY: only an http:\/\//);
    assert.throws(() => parseProxyUrl('http://squid:3128/path', 'k'), /no path/);
    assert.throws(() => parseProxyUrl('http://:3128', 'k'), /not a proxy URL|names no proxy host/);
  });
});

/** A server that answers one CONNECT with `reply` (bytes a real proxy sent, see below). */
async function answering(reply: string | null): Promise<{ server: Server; proxy: ReturnType<typeof parseProxyUrl>; seen: Promise<string> }> {
  let resolveSeen!: (s: string) => void;
  const seen = new Promise<string>((r) => (resolveSeen = r));
  const server = createServer((socket) => {
    let head = '';
    socket.on('data', (d) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      resolveSeen(head);
      if (reply === null) socket.destroy();
      else socket.end(reply);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, proxy: parseProxyUrl(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 'service.proxy'), seen };
}

describe('the CONNECT exchange', () => {
  // Recorded from squid 5.7 (Debian 12) with a wrong Basic password, 2026-11-25; body cut.
  const SQUID_407 = 'HTTP/1.1 407 Proxy Authentication Required\r\nServer: squid/5.7\r\nMime-Version: 1.0\r\nContent-Type: text/html;charset=utf-8\r\nContent-Length: 0\r\nX-Squid-Error: ERR_CACHE_ACCESS_DENIED 0\r\nProxy-Authenticate: Basic realm="corp-proxy"\r\nConnection: keep-alive\r\n\r\n';

  it('sends CONNECT with Host and Basic credentials, and classifies a 407', async () => {
    const { server, proxy, seen } = await answering(SQUID_407);
    try {
      const err = await openTunnel(proxy, 'user:pa:ss', 'api.vendor.example', 8443, 5000).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof EgressProxyError);
      assert.equal(err.reason, 'auth');
      assert.equal(err.proxyStatus, 407);
      assert.equal(err.status, 502);
      assert.match(err.message, /\(service\.proxy\) refused the tunnel: 407 proxy authentication failed/);
      assert.equal(await seen, `CONNECT api.vendor.example:8443 HTTP/1.1\r\nHost: api.vendor.example:8443\r\nProxy-Authorization: Basic ${Buffer.from('user:pa:ss').toString('base64')}\r\n\r\n`);
    } finally {
      server.close();
    }
  });

  it('brackets an IPv6 target; a refusal, a non-HTTP answer and a close each have their reason', async () => {
    const refused = await answering('HTTP/1.1 403 Access denied\r\nContent-Length: 0\r\n\r\n');
    const e1 = await openTunnel(refused.proxy, undefined, '::1', 443, 5000).catch((e: EgressProxyError) => e);
    assert.equal((e1 as EgressProxyError).reason, 'refused');
    assert.match((e1 as Error).message, /refused CONNECT \[::1\]:443 with 403/);
    assert.match(await refused.seen, /^CONNECT \[::1\]:443 HTTP\/1\.1\r\nHost: \[::1\]:443\r\n\r\n$/);
    refused.server.close();

    const socks = await answering('\x05\xff\r\n\r\n');
    assert.equal(((await openTunnel(socks.proxy, undefined, 'h', 443, 5000).catch((e: EgressProxyError) => e)) as EgressProxyError).reason, 'refused');
    socks.server.close();

    const closing = await answering(null);
    const e3 = await openTunnel(closing.proxy, undefined, 'h', 443, 5000).catch((e: EgressProxyError) => e) as EgressProxyError;
    assert.equal(e3.reason, 'closed');
    closing.server.close();
  });

  it('an unreachable proxy; bytes after the 200 (before our ClientHello) are refused', async () => {
    const gone = await answering('');
    gone.server.close();
    await new Promise((r) => gone.server.once('close', r));
    const e = await openTunnel(gone.proxy, undefined, 'h', 443, 5000).catch((err: EgressProxyError) => err) as EgressProxyError;
    assert.equal(e.reason, 'unreachable');
    assert.match(e.message, /is unreachable \(ECONNREFUSED\)/);

    const chatty = await answering('HTTP/1.0 200 Connection established\r\n\r\nFIRST-BYTES');
    const e2 = await openTunnel(chatty.proxy, undefined, 'h', 443, 5000).catch((err: EgressProxyError) => err) as EgressProxyError;
    assert.equal(e2.reason, 'refused');
    assert.match(e2.message, /sent data after its answer to CONNECT h:443, before TLS began/);
    chatty.server.close();
  });
});
