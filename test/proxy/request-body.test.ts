import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { ENGINES, startSidecar, waitReady } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await pause(10);
}

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
function upload(port: number, headers: Record<string, string>, localAddress = '127.0.0.1') {
  let resolve!: (a: { status: number; body: string }) => void;
  const answer = new Promise<{ status: number; body: string }>((r) => { resolve = r; });
  const req = request({ host: '127.0.0.1', port, localAddress, method: 'POST', path: '/pub/b2b/v1/echo', headers, agent: false }, (res) => {
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

    it('streamed bodies wait for their source\'s share of maxSockets; another source is not held back', async (t) => {
      const up = await hashingUpstream();
      t.after(() => up.close());
      // 4 sockets, a share of ½: two streams per source at once.
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { proxy: { maxSockets: 4, streamedUploadShare: 0.5 }, guard: { allow: ['127.0.0.0/8'] } } });
      t.after(() => s.stop());
      await waitReady(s);
      const chunked = { 'transfer-encoding': 'chunked' };
      const a = [upload(s.port, chunked), upload(s.port, chunked), upload(s.port, chunked)];
      t.after(() => { for (const u of a) u.req.destroy(); });
      for (const [i, u] of a.entries()) u.req.write(`a${i}`);
      await until(() => up.seen.length >= 2);
      await pause(200);
      assert.equal(up.seen.length, 2, 'the third stream of 127.0.0.1 waits');
      const b = upload(s.port, chunked, '127.0.0.2');
      t.after(() => b.req.destroy());
      b.req.write('b0');
      await until(() => up.seen.length >= 3);
      assert.equal(up.seen.length, 3, 'another source streams at once');
      // One of the first two completes: the waiting one starts, with its whole body.
      a[0]!.req.end();
      assert.equal((await a[0]!.answer).status, 200);
      await until(() => up.seen.length >= 4);
      a[2]!.req.end('-end');
      const third = await a[2]!.answer;
      assert.equal(third.status, 200);
      assert.equal(JSON.parse(third.body).sha, sha(Buffer.from('a2-end')));
    });
  });
}
