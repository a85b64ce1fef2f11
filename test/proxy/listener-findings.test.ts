import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { rawExchange, statuses } from '../helpers/raw-client.js';
import { ENGINES, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';

/** Regression tests for the listener findings (docs/traps.md T23, T30, T32). */

interface Received { method: string; url: string; headers: IncomingMessage['headers']; body: string }

for (const engine of ENGINES) {
  describe(`listener findings (engine ${engine})`, () => {
    let up: TestUpstream;
    let s: RunningSidecar;
    const received: Received[] = [];

    before(async () => {
      up = await startUpstream((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('latin1') });
          res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream': '1' });
          res.end(`ok ${req.url}`);
        });
      });
      s = await startSidecar({ baseUrl: up.url, engine });
      await waitReady(s);
    });
    after(async () => {
      await s.stop();
      await up.close();
    });
    const reset = () => { received.length = 0; up.seen.length = 0; };

    describe("Java's default HTTP client gets 501 on every request (h2c upgrade ignored)", () => {
      const offer = 'Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAEAAEAAAAIAAAABAAMAAABkAAQBAAAAAAUAAEAA\r\n';

      it('serves a GET offering h2c as HTTP/1.1 and forwards no trace of the offer', async () => {
        reset();
        const answer = await rawExchange(s.port, `GET /h2c/get HTTP/1.1\r\nHost: x\r\n${offer}\r\nGET /h2c/next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        assert.deepEqual(statuses(answer.text), [200, 200]);
        assert.doesNotMatch(answer.text, /101 Switching/);
        assert.deepEqual(received.map((r) => r.url), ['/h2c/get', '/h2c/next']);
        for (const name of ['upgrade', 'http2-settings']) assert.equal(received[0]!.headers[name], undefined, `${name} went upstream`);
        assert.doesNotMatch(String(received[0]!.headers['connection']), /upgrade|http2-settings/i);
      });

      it('serves a POST offering h2c with its body intact', async () => {
        reset();
        const body = 'a=1&b=2';
        const answer = await rawExchange(s.port, `POST /h2c/post HTTP/1.1\r\nHost: x\r\n${offer}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
        assert.deepEqual(statuses(answer.text), [200]);
        assert.deepEqual(received.map((r) => [r.method, r.url, r.body]), [['POST', '/h2c/post', body]]);
      });

      it('serves an h2c offer pipelined behind a slower request after it, in order', async () => {
        reset();
        const answer = await rawExchange(s.port, `POST /h2c/first HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n` +
          `GET /h2c/second HTTP/1.1\r\nHost: x\r\n${offer}\r\nGET /h2c/third HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        assert.deepEqual(statuses(answer.text), [200, 200, 200]);
        assert.deepEqual(received.map((r) => r.url), ['/h2c/first', '/h2c/second', '/h2c/third']);
        assert.ok(answer.text.indexOf('ok /h2c/first') < answer.text.indexOf('ok /h2c/second'));
      });

      it('strips an h2c offer whose Connection does not name upgrade', async () => {
        reset();
        const answer = await rawExchange(s.port, 'GET /h2c/plain HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\nHTTP2-Settings: AAEAAEAA\r\nConnection: close\r\n\r\n');
        assert.deepEqual(statuses(answer.text), [200]);
        assert.equal(received[0]!.headers['http2-settings'], undefined);
        assert.equal(received[0]!.headers['upgrade'], undefined);
      });

      for (const protocols of ['websocket', 'h2c, websocket', 'HTTP/2.0']) {
        it(`still refuses Upgrade: ${protocols} with 501`, async () => {
          reset();
          const answer = await rawExchange(s.port, `GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: ${protocols}\r\n\r\n`);
          assert.match(answer.text, /^HTTP\/1\.1 501 /);
          assert.match(answer.text, /\{"message":"protocol upgrades are not supported"\}$/);
          assert.equal(received.length, 0);
        });
      }
    });

    describe('A body silently dropped (header count at the parser limit)', () => {
      const filler = 'a:\r\n'.repeat(2100);

      it('forwards the body of a Content-Length placed after 2,100 header lines', async () => {
        reset();
        const answer = await rawExchange(s.port, `POST /many/cl HTTP/1.1\r\nHost: x\r\n${filler}Content-Length: 5\r\n\r\nhello` +
          'GET /many/next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        assert.deepEqual(statuses(answer.text), [200, 200]);
        assert.deepEqual(received.map((r) => [r.url, r.body]), [['/many/cl', 'hello'], ['/many/next', '']]);
      });

      it('forwards the body of a Transfer-Encoding placed after 2,100 header lines', async () => {
        reset();
        const answer = await rawExchange(s.port, `POST /many/te HTTP/1.1\r\nHost: x\r\n${filler}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n`);
        assert.deepEqual(statuses(answer.text), [200]);
        assert.deepEqual(received.map((r) => [r.url, r.body]), [['/many/te', 'hello']]);
      });

      it('still answers 431 when the header bytes pass the cap', async () => {
        reset();
        const answer = await rawExchange(s.port, `GET /many HTTP/1.1\r\nHost: x\r\n${'abcdefgh: 12345678\r\n'.repeat(2000)}\r\n`);
        assert.match(answer.text, /^HTTP\/1\.1 431 /);
        assert.equal(received.length, 0);
      });
    });

    describe('Pipelined requests reach the service out of order', () => {
      it('forwards POST (Content-Length), POST (chunked), DELETE, GET sent in one write in that order', async () => {
        reset();
        const big = 'x'.repeat(48 * 1024);
        const answer = await rawExchange(s.port,
          `POST /order/0 HTTP/1.1\r\nHost: x\r\nContent-Length: ${big.length}\r\n\r\n${big}` +
          'POST /order/1 HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\none\r\n0\r\n\r\n' +
          'DELETE /order/2 HTTP/1.1\r\nHost: x\r\n\r\n' +
          'GET /order/3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
        assert.deepEqual(statuses(answer.text), [200, 200, 200, 200]);
        assert.deepEqual(up.seen.map((r) => `${r.method} ${r.url}`), ['POST /order/0', 'POST /order/1', 'DELETE /order/2', 'GET /order/3']);
        assert.equal(received[0]!.body.length, big.length);
        assert.equal(received[1]!.body, 'one');
      });
    });

    describe('Leniency inherited from Node', () => {
      const refused: Array<[name: string, request: string, status: number]> = [
        ['a request line without a version', 'GET /lenient\r\n\r\n', 505],
        ['HTTP/0.9', 'GET /lenient HTTP/0.9\r\nHost: x\r\n\r\n', 505],
        ['HTTP/2.0 on the HTTP/1 listener', 'GET /lenient HTTP/2.0\r\nHost: x\r\n\r\n', 505],
        ['an unknown transfer coding before chunked', 'POST /lenient HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: cow, chunked\r\n\r\n1\r\na\r\n0\r\n\r\n', 501],
        ['gzip before chunked on two lines', 'POST /lenient HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n', 501],
        ['Transfer-Encoding in HTTP/1.0', 'POST /lenient HTTP/1.0\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n', 400],
        ['two Host lines', 'GET /lenient HTTP/1.1\r\nHost: x\r\nHost: evil.example\r\n\r\n', 400],
      ];
      for (const [name, request, status] of refused) {
        it(`answers ${status} with a JSON message to ${name}, forwards nothing and closes`, async () => {
          reset();
          const answer = await rawExchange(s.port, `${request}GET /lenient/after HTTP/1.1\r\nHost: x\r\n\r\n`);
          assert.equal(answer.timedOut, false, 'the connection is closed after the refusal');
          assert.deepEqual(statuses(answer.text), [status]);
          assert.match(answer.text, /\r\n\r\n\{"message":"[^"]+"\}$/);
          assert.deepEqual(up.seen.map((r) => r.url), []);
        });
      }

      it('never forwards a request pipelined behind the 400 Node itself answers for a missing Host', async () => {
        reset();
        const answer = await rawExchange(s.port, 'GET /lenient/no-host HTTP/1.1\r\nX-A: 1\r\n\r\nGET /lenient/behind HTTP/1.1\r\nHost: x\r\n\r\n');
        assert.deepEqual(statuses(answer.text), [400]);
        assert.deepEqual(up.seen.map((r) => r.url), [], 'a request whose answer can never be sent went upstream');
      });

      it('accepts HTTP/1.0 and a chunked coding in any letter case', async () => {
        reset();
        const one = await rawExchange(s.port, 'GET /lenient/10 HTTP/1.0\r\n\r\n');
        const two = await rawExchange(s.port, 'POST /lenient/chunked HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: Chunked\r\nConnection: close\r\n\r\n1\r\na\r\n0\r\n\r\n');
        assert.deepEqual([...statuses(one.text), ...statuses(two.text)], [200, 200]);
        assert.deepEqual(received.map((r) => [r.url, r.body]), [['/lenient/10', ''], ['/lenient/chunked', 'a']]);
      });
    });
  });
}
