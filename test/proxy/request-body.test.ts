import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { ENGINES, startSidecar, waitReady } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A service that reads the body, then answers its length and hash; what framing it saw is in `seen`. */
const hashingUpstream = () => startUpstream((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    res.end(JSON.stringify({ length: body.length, sha: sha(body) }));
  });
});

/** A POST whose body the test writes piece by piece; resolves with the answer. */
function upload(port: number, headers: Record<string, string>) {
  let resolve!: (a: { status: number; body: string }) => void;
  const answer = new Promise<{ status: number; body: string }>((r) => { resolve = r; });
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/pub/b2b/v1/echo', headers, agent: false }, (res) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
  });
  req.on('error', () => resolve({ status: -1, body: '' }));
  return { req, answer };
}

for (const engine of ENGINES) {
  describe(`one request-body source (engine ${engine})`, () => {
    it('a body within replayBodyLimitBytes goes upstream only once it is complete, with its Content-Length', async (t) => {
      const up = await hashingUpstream();
      t.after(() => up.close());
      const s = await startSidecar({ baseUrl: up.url, engine });
      t.after(() => s.stop());
      await waitReady(s);
      const body = randomBytes(48 * 1024);
      const { req, answer } = upload(s.port, { 'content-length': String(body.length) });
      req.write(body.subarray(0, 20_000));
      await pause(200);
      assert.equal(up.seen.length, 0, 'nothing upstream while the body is incomplete');
      req.end(body.subarray(20_000));
      const got = await answer;
      assert.equal(got.status, 200);
      assert.deepEqual(JSON.parse(got.body), { length: body.length, sha: sha(body) });
      assert.equal(up.seen[0]?.headers['content-length'], String(body.length));
      assert.equal(up.seen[0]?.headers['transfer-encoding'], undefined);
    });

    it('a streamed body restarts the header deadline as it arrives: slower than the deadline in total is answered 200, a stall longer than it 504', async (t) => {
      const up = await hashingUpstream();
      t.after(() => up.close());
      // No minimum rate: only the engine's header deadline (1 s) watches the upload.
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { proxy: { timeoutMs: 1000, minUploadBytesPerSecond: 0 } } });
      t.after(() => s.stop());
      await waitReady(s);
      const steady = upload(s.port, { 'transfer-encoding': 'chunked' });
      const sent: Buffer[] = [];
      for (let i = 0; i < 15; i++) {
        const chunk = randomBytes(1000);
        sent.push(chunk);
        steady.req.write(chunk);
        await pause(100);
      }
      steady.req.end();
      const ok = await steady.answer;
      assert.equal(ok.status, 200, '1.5 s of upload, never 1 s without progress');
      assert.equal(JSON.parse(ok.body).sha, sha(Buffer.concat(sent)));

      const stalled = upload(s.port, { 'transfer-encoding': 'chunked' });
      stalled.req.write(randomBytes(1000));
      const cut = await stalled.answer;
      stalled.req.destroy();
      assert.equal(cut.status, 504, 'no progress for longer than the header deadline');
    });
  });
}
