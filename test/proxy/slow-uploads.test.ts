import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { UPLOAD_CHECK_MS, UPLOAD_GRACE_MS } from '../../src/proxy/body/upload-pace.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { ENGINES, send, startSidecar, waitReady } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/** Above the default `proxy.replayBodyLimitBytes`: such a body streams rather than being received first. */
const STREAMED = 2 * 1024 * 1024;

/** An upload that sends `first` and then nothing more: while it streams, it holds a pooled connection. */
function trickle(port: number, length: number, first: string): Promise<number> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/pub/b2b/v1/echo', headers: { 'content-length': String(length) } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(-1));
    req.write(first);
  });
}

async function eventually(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check());
}

/** The service reads each body to its end before answering, as most do. */
const readsWholeBody = () => startUpstream((req, res) => {
  req.resume();
  req.on('end', () => res.end('{}'));
});

for (const engine of ENGINES) {
  describe(`slow uploads cannot starve the upstream pool (engine ${engine})`, () => {
    it('streamed uploads below proxy.minUploadBytesPerSecond are cut with 408 and release their connections; a normal request then gets through', async (t) => {
      const up = await readsWholeBody();
      t.after(() => up.close());
      const clock = new FakeClock();
      // One pooled connection: streams may use all of a pool of one (none is kept back), so only
      // the pace frees it.
      const s = await startSidecar({ baseUrl: up.url, engine, clock, overrides: { proxy: { maxSockets: 1, streamedUploadShare: 1 } } });
      t.after(() => s.stop());
      await waitReady(s);
      // An upload that sent one byte of 2 MiB: the pooled connection is taken.
      const slow = [trickle(s.port, STREAMED, 'x')];
      await eventually(() => up.open === 1);
      const normal = send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
      // The grace (10 s at 1024 bytes/s) runs out, one byte does not refill it.
      clock.advance(UPLOAD_GRACE_MS + UPLOAD_CHECK_MS);
      assert.deepEqual(await Promise.all(slow), [408]);
      assert.equal((await normal).status, 200, 'the normal request got a connection');
      assert.ok(s.log.lines().some((l) => l.message === 'request body too slow: cut'));
    });

    it('a small upload below the rate is cut with 408 while it is received, before it takes a service connection', async (t) => {
      const up = await readsWholeBody();
      t.after(() => up.close());
      const clock = new FakeClock();
      const s = await startSidecar({ baseUrl: up.url, engine, clock });
      t.after(() => s.stop());
      await waitReady(s);
      const slow = trickle(s.port, 1000, 'x');
      await new Promise((r) => setTimeout(r, 50));
      clock.advance(UPLOAD_GRACE_MS - UPLOAD_CHECK_MS);
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(up.seen.length, 0, 'nothing went upstream while the body was arriving');
      clock.advance(2 * UPLOAD_CHECK_MS);
      assert.equal(await slow, 408);
      assert.equal(up.seen.length, 0, 'the cut body never went upstream');
    });

    it('an upload keeping pace is not cut, however long it takes', async (t) => {
      const up = await readsWholeBody();
      t.after(() => up.close());
      const clock = new FakeClock();
      const s = await startSidecar({ baseUrl: up.url, engine, clock, overrides: { proxy: { minUploadBytesPerSecond: 100 } } });
      t.after(() => s.stop());
      await waitReady(s);
      const chunk = 'y'.repeat(1000); // the grace's worth (100 B/s × 10 s)
      const answer = new Promise<number>((resolve) => {
        // Chunked: it streams, so the service's connection is open while it arrives.
        const req = request({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/pub/b2b/v1/echo', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        void (async () => {
          for (let i = 0; i < 3; i++) {
            req.write(chunk);
            await eventually(() => up.open === 1);
            await new Promise((r) => setTimeout(r, 50));
            clock.advance(UPLOAD_GRACE_MS - 1);
          }
          req.end();
        })();
      });
      assert.equal(await answer, 200);
    });
  });
}
