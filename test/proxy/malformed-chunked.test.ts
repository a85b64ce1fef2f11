import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rawExchange, statuses } from '../helpers/raw-client.js';
import { ENGINES, send, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';

/**
 * A chunked body the parser cannot read is a client error: when nothing of the answer has gone
 * out yet, the client gets a 400 with a JSON message and `Connection: close`, not a bare close
 * (docs/design.md, "Request bodies").
 */
const HEAD = 'POST /upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n';
const MALFORMED: Record<string, string> = {
  'a chunk size that is not hex': `${HEAD}zz\r\nhello\r\n0\r\n\r\n`,
  'a chunk without its CRLF': `${HEAD}5\r\nhelloXX5\r\nhello\r\n0\r\n\r\n`,
  'garbage in a chunk extension': `${HEAD}5;\x01=\x7f\r\nhello\r\n0\r\n\r\n`,
  'a chunk size that overflows': `${HEAD}fffffffffffffffffff\r\nhello\r\n0\r\n\r\n`,
  'a bad chunk after a good one': `${HEAD}5\r\nhello\r\n-1\r\nhello\r\n0\r\n\r\n`,
};

for (const engine of ENGINES) {
  describe(`malformed chunked bodies are answered 400 (engine ${engine})`, () => {
    let up: TestUpstream;
    let s: RunningSidecar;

    before(async () => {
      // The service reads the body before answering, as most do: the error comes first.
      up = await startUpstream((req, res) => {
        req.resume();
        req.on('end', () => res.end('ok'));
      });
      s = await startSidecar({ baseUrl: up.url, engine });
      await waitReady(s);
    });
    after(async () => {
      await s.stop();
      await up.close();
    });

    for (const [name, bytes] of Object.entries(MALFORMED)) {
      it(`answers ${name} with 400 and closes`, async () => {
        const result = await rawExchange(s.port, bytes, 3000);
        assert.equal(result.timedOut, false, 'the connection must close');
        assert.deepEqual(statuses(result.text), [400], result.text);
        assert.match(result.text, /\r\nconnection: close\r\n/i);
        const body = result.text.slice(result.text.indexOf('\r\n\r\n') + 4);
        assert.equal(typeof (JSON.parse(body) as { message: unknown }).message, 'string');
        // The listener is still healthy for the next client.
        assert.equal((await send(s.port, { path: '/after' })).status, 200);
      });
    }
  });
}
