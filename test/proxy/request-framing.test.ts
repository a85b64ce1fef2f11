import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connectionNominated } from '../../src/proxy/hop-by-hop.js';
import { CREDENTIALS, ENGINES, send, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startUpstream, type TestUpstream } from '../helpers/upstream.js';

/** A body that is also a complete HTTP request: if it reaches the upstream unframed, it becomes one. */
const SMUGGLED = 'POST /store HTTP/1.1\r\nHost: svc\r\nContent-Length: 120\r\n\r\n';

/** Writes raw bytes to the listener and resolves with the answer once the listener closes. */
function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text));
    let data = '';
    socket.setTimeout(3000, () => socket.destroy());
    socket.on('data', (d) => (data += d));
    socket.on('close', () => resolve(data));
    socket.on('error', reject);
  });
}

/** Bounded: if a smuggled request swallowed this one, the upstream never answers it. */
function within<T>(ms: number, promise: Promise<T>): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed out'>((resolve) => { timer = setTimeout(() => resolve('timed out'), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

for (const engine of ENGINES) {
  describe(`request bodies are framed explicitly upstream (engine ${engine})`, () => {
    let up: TestUpstream;
    let s: RunningSidecar;
    const bodies: string[] = [];

    before(async () => {
      up = await startUpstream((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          bodies.push(Buffer.concat(chunks).toString());
          res.writeHead(200, { 'content-type': 'text/plain' });
          res.end('ok');
        });
      });
      // One upstream connection: a smuggled request would sit in front of the next client's.
      s = await startSidecar({ baseUrl: up.url, engine, overrides: { proxy: { maxSockets: 1 } } });
      await waitReady(s);
    });
    after(async () => {
      await s.stop();
      await up.close();
    });

    /** Sends `request`, then a credentialed GET, and returns what the upstream saw for both. */
    async function exchange(request: string) {
      up.seen.length = 0;
      bodies.length = 0;
      const first = await raw(s.port, request);
      const next = await within(2000, send(s.port, { path: '/next' }));
      return { first, next, seen: up.seen.map((r) => `${r.method} ${r.url}`), bodies: [...bodies] };
    }

    function assertOneRequestWithBodyIntact(result: Awaited<ReturnType<typeof exchange>>, method: string) {
      assert.match(result.first, /^HTTP\/1\.1 200/);
      assert.deepEqual(result.seen, [`${method} /del`, 'GET /next'], 'the body must not become a request of its own');
      assert.equal(result.bodies[0], SMUGGLED);
      assert.notEqual(result.next, 'timed out');
      for (const body of result.bodies) {
        assert.equal(body.includes(CREDENTIALS.apiKey), false, 'the next client\'s ApiKey ended up in a request body');
      }
    }

    for (const method of ['DELETE', 'OPTIONS']) {
      it(`sends a chunked ${method} body as one request (no smuggling)`, async () => {
        const size = Buffer.byteLength(SMUGGLED).toString(16);
        const result = await exchange(`${method} /del HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n` +
          `${size}\r\n${SMUGGLED}\r\n0\r\n\r\n`);
        assertOneRequestWithBodyIntact(result, method);
      });

      it(`keeps the Content-Length of a ${method} whose Connection header nominates it (no smuggling)`, async () => {
        const result = await exchange(`${method} /del HTTP/1.1\r\nHost: x\r\nConnection: close, content-length\r\n` +
          `Content-Length: ${Buffer.byteLength(SMUGGLED)}\r\n\r\n${SMUGGLED}`);
        assertOneRequestWithBodyIntact(result, method);
      });
    }

    it('sends a bodiless DELETE without a body, and the connection stays usable', async () => {
      up.seen.length = 0;
      bodies.length = 0;
      const res = await send(s.port, { method: 'DELETE', path: '/del' });
      assert.equal(res.status, 200);
      assert.equal((await send(s.port, { path: '/next' })).status, 200);
      assert.deepEqual(up.seen.map((r) => `${r.method} ${r.url}`), ['DELETE /del', 'GET /next']);
      assert.deepEqual(bodies, ['', '']);
    });
  });
}

describe('connectionNominated', () => {
  it('never lets Connection nominate the framing or routing headers', () => {
    assert.deepEqual([...connectionNominated('close, Content-Length, transfer-encoding,HOST, x-private')!], ['close', 'x-private']);
  });

  it('skips the parse for the usual values', () => {
    assert.equal(connectionNominated('keep-alive'), undefined);
    assert.equal(connectionNominated(undefined), undefined);
  });
});
