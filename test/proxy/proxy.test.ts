import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { CREDENTIALS, ENGINES, echoed, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';

type Echo = { method: string; path: string; query: string; headers: Record<string, string>; bodyBytes: number; bodySha256: string };

for (const engine of ENGINES) {
  describe(`proxy over HTTPS (engine ${engine})`, () => {
    let sim: Awaited<ReturnType<typeof startSimulator>>;
    let s: RunningSidecar;
    const token = () => s.sidecar.tokens!.current()!.value;

    before(async () => {
      sim = await startSimulator();
      s = await startSidecar({ baseUrl: sim.baseUrl, engine });
      await waitReady(s);
    });
    after(async () => {
      await s.stop();
      await sim.stop();
    });

    it('attaches the token and the ApiKey to a proxied request', async () => {
      const res = await send(s.port, { path: '/pub/b2b/v1/echo' });
      assert.equal(res.status, 200);
      const echo = res.json<Echo>();
      assert.equal(echo.headers.authorization, echoed(`Bearer ${token()}`));
      assert.equal(echo.headers.apikey, echoed(CREDENTIALS.apiKey));
    });

    it('replaces client-sent Authorization and ApiKey headers', async () => {
      const res = await send(s.port, { path: '/pub/b2b/v1/echo', headers: { authorization: 'Bearer forged', apikey: 'forged-key' } });
      assert.equal(res.status, 200);
      const echo = res.json<Echo>();
      assert.equal(echo.headers.authorization, echoed(`Bearer ${token()}`));
      assert.equal(echo.headers.apikey, echoed(CREDENTIALS.apiKey));
    });

    it('keeps the path and query intact', async () => {
      const res = await send(s.port, { path: '/pub/b2b/v1/echo/a/b%20c?x=1&y=%2F&z' });
      const echo = res.json<Echo>();
      assert.equal(echo.path, '/pub/b2b/v1/echo/a/b%20c');
      assert.equal(echo.query, 'x=1&y=%2F&z');
    });

    it('sends empty path segments upstream as received, like the other engine', async () => {
      const res = await send(s.port, { path: '/pub/b2b/v1/echo/a//b/?x=1//2' });
      const echo = res.json<Echo>();
      assert.equal(echo.path, '/pub/b2b/v1/echo/a//b/');
      assert.equal(echo.query, 'x=1//2');
    });

    it('answers TRACE with 501 and never sends it upstream with the credentials', async () => {
      const before = sim.stats.apiRequests;
      const res = await send(s.port, { method: 'TRACE', path: '/pub/b2b/v1/echo' });
      assert.equal(res.status, 501);
      assert.match(res.json<{ message: string }>().message, /TRACE/);
      assert.equal(sim.stats.apiRequests, before);
    });

    it('forwards a 1 MiB POST body intact', async () => {
      const body = Buffer.alloc(1024 * 1024, 7);
      body.write('start', 0);
      const res = await send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', body, headers: { 'content-type': 'application/octet-stream', 'content-length': body.length } });
      const echo = res.json<Echo>();
      assert.equal(echo.method, 'POST');
      assert.equal(echo.bodyBytes, body.length);
      assert.equal(echo.bodySha256, createHash('sha256').update(body).digest('hex'));
    });

    it('streams a chunked upload larger than the replay limit', async () => {
      const { request } = await import('node:http');
      const chunk = Buffer.alloc(256 * 1024, 3);
      const answer = await new Promise<Echo>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: s.port, method: 'PUT', path: '/pub/b2b/v1/echo', agent: false }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c: Buffer) => parts.push(c));
          res.on('end', () => resolve(JSON.parse(Buffer.concat(parts).toString()) as Echo));
        });
        req.on('error', reject);
        for (let i = 0; i < 8; i++) req.write(chunk);
        req.end();
      });
      assert.equal(answer.bodyBytes, 8 * chunk.length);
      assert.equal(answer.bodySha256, createHash('sha256').update(Buffer.concat(Array(8).fill(chunk))).digest('hex'));
    });

    it('streams an 8 MiB response intact', async () => {
      const n = 8 * 1024 * 1024;
      const res = await send(s.port, { path: `/pub/b2b/v1/download?bytes=${n}` });
      assert.equal(res.status, 200);
      assert.equal(res.body.length, n);
      for (const i of [0, 1, 250, 251, 12345, n - 1]) assert.equal(res.body[i], i % 251, `byte ${i}`);
    });

    it('passes a redirect back instead of following it', async () => {
      const res = await send(s.port, { path: `/pub/b2b/v1/redirect?to=${encodeURIComponent('https://elsewhere.example/steal')}` });
      assert.equal(res.status, 302);
      assert.equal(res.headers.location, 'https://elsewhere.example/steal');
    });

    it('passes upstream statuses and bodies back unchanged', async () => {
      const res = await send(s.port, { path: '/pub/b2b/v1/status/418' });
      assert.equal(res.status, 418);
      assert.equal(typeof res.json().message, 'string');
    });

    it('attaches credentials to a request with Expect: 100-continue (docs/traps.md T2)', async () => {
      const body = JSON.stringify({ a: 1 });
      const res = await send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', body, headers: { expect: '100-continue', 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), authorization: 'Bearer client-own' } });
      assert.equal(res.status, 200);
      const echo = res.json<Echo>();
      assert.equal(echo.headers.authorization, echoed(`Bearer ${token()}`));
      assert.equal(echo.headers.expect, undefined);
      assert.equal(echo.bodyBytes, Buffer.byteLength(body));
    });

    it('survives a chunked request with a Trailer header and trailers (docs/traps.md T3)', async () => {
      const { connect } = await import('node:net');
      const raw = await new Promise<string>((resolve, reject) => {
        const socket = connect(s.port, '127.0.0.1', () => {
          socket.write('POST /pub/b2b/v1/echo HTTP/1.1\r\nHost: localhost\r\nTrailer: X-Checksum\r\nTE: trailers\r\n' +
            'Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\nX-Checksum: abc\r\n\r\n');
        });
        let data = '';
        socket.on('data', (d) => (data += d));
        socket.on('end', () => resolve(data));
        socket.on('error', reject);
      });
      assert.match(raw, /^HTTP\/1\.1 200/);
      const echo = JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4).replace(/^[0-9a-f]+\r\n/, '').replace(/\r\n0\r\n\r\n$/, '')) as Echo;
      assert.equal(echo.headers.trailer, undefined);
      assert.equal(echo.bodyBytes, 5);
      const again = await send(s.port, { path: '/pub/b2b/v1/echo' });
      assert.equal(again.status, 200);
    });

    it('strips hop-by-hop headers and those the Connection header nominates (docs/traps.md T7)', async () => {
      const res = await send(s.port, {
        path: '/pub/b2b/v1/echo',
        headers: { connection: 'keep-alive, x-private', 'x-private': 'secret-hop', 'x-kept': 'yes', 'proxy-authorization': 'Basic abc', 'x-forwarded-for': '6.6.6.6', 'keep-alive': 'timeout=5' },
      });
      const h = res.json<Echo>().headers;
      assert.equal(h['x-private'], undefined);
      assert.equal(h['proxy-authorization'], undefined);
      assert.equal(h['x-forwarded-for'], undefined);
      assert.equal(h['keep-alive'], undefined);
      assert.equal(h['x-kept'], 'yes');
    });

    it('always presents the service Host, whatever Host the client sends (docs/traps.md T5)', async () => {
      const res = await send(s.port, { path: '/pub/b2b/v1/echo', headers: { host: 'evil.example' } });
      assert.equal(res.status, 200);
      assert.equal(res.json<Echo>().headers.host, new URL(sim.baseUrl).host);
    });

    it('replays a request once after an upstream 401 and needs one gentoken call', async () => {
      const before = sim.stats.tokenRequests;
      const oldToken = token();
      sim.faults.revokeAll();
      const body = JSON.stringify({ replay: true });
      const res = await send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', body, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } });
      assert.equal(res.status, 200);
      assert.equal(res.json<Echo>().bodySha256, createHash('sha256').update(body).digest('hex'));
      assert.notEqual(token(), oldToken);
      assert.equal(sim.stats.tokenRequests - before, 1);
      const metrics = await s.sidecar.registry.metrics();
      assert.match(metrics, /^b2b_sidecar_upstream_unauthorized_total [1-9]/m);
      assert.match(metrics, /^b2b_sidecar_token_refresh_total\{result="success",credential="default"\} [2-9]/m);
      assert.match(metrics, /^b2b_sidecar_requests_total\{route="service",method="POST",code="200"\} [1-9]/m);
      assert.match(metrics, /^b2b_sidecar_token_valid\{credential="default"\} 1$/m);
    });

    it('turns a burst of concurrent 401s into one gentoken call', async () => {
      const before = sim.stats.tokenRequests;
      sim.faults.revokeAll();
      const answers = await Promise.all(Array.from({ length: 20 }, () => send(s.port, { path: '/pub/b2b/v1/echo' })));
      assert.deepEqual(answers.map((a) => a.status), Array(20).fill(200));
      assert.equal(sim.stats.tokenRequests - before, 1);
    });

    it('never presented an expired token upstream', () => {
      assert.equal(sim.stats.expiredTokenPresented, 0);
    });

    it('refuses an absolute-form target without contacting anything', async () => {
      const before = sim.stats.apiRequests;
      const res = await send(s.port, { path: 'http://other.example/pub/b2b/v1/echo' });
      assert.equal(res.status, 400);
      assert.match(res.json<{ message: string }>().message, /forward proxy/);
      assert.equal(sim.stats.apiRequests, before);
    });
  });
}
