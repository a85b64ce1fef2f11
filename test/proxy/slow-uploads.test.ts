import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { UPLOAD_WINDOW_MS } from '../../src/proxy/proxy-handler.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { ENGINES, send, startSidecar, waitReady } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/** An upload that sends `first` and then nothing more: it holds a pooled connection while it lasts. */
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

for (const engine of ENGINES) {
  describe(`slow uploads cannot starve the upstream pool (engine ${engine})`, () => {
    it('uploads below proxy.minUploadBytesPerSecond are cut with 408 and release their connections; a normal request then gets through', async (t) => {
      // The service reads each body to its end before answering, as most do.
      const up = await startUpstream((req, res) => {
        req.resume();
        req.on('end', () => res.end('{}'));
      });
      t.after(() => up.close());
      const clock = new FakeClock();
      const s = await startSidecar({ baseUrl: up.url, engine, clock, overrides: { proxy: { maxSockets: 4 } } });
      t.after(() => s.stop());
      await waitReady(s);
      // Four uploads that sent one byte of a thousand: every pooled connection is taken.
      const slow = Array.from({ length: 4 }, () => trickle(s.port, 1000, 'x'));
      await up.waitOpen(4).then(() => eventually(() => up.open === 4));
      const normal = send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', body: '{"ok":true}', headers: { 'content-type': 'application/json' } });
      // A window passes with one byte each: far below 1024 bytes/s.
      clock.advance(UPLOAD_WINDOW_MS);
      assert.deepEqual(await Promise.all(slow), [408, 408, 408, 408]);
      assert.equal((await normal).status, 200, 'the normal request got a connection');
      assert.ok(s.log.lines().some((l) => l.message === 'request body too slow: cut'));
    });

    it('an upload keeping pace is not cut, however long it takes', async (t) => {
      const up = await startUpstream((req, res) => {
        req.resume();
        req.on('end', () => res.end('{}'));
      });
      t.after(() => up.close());
      const clock = new FakeClock();
      const s = await startSidecar({ baseUrl: up.url, engine, clock, overrides: { proxy: { minUploadBytesPerSecond: 100 } } });
      t.after(() => s.stop());
      await waitReady(s);
      const chunk = 'y'.repeat(1000); // one window's worth (100 B/s × 10 s)
      const answer = new Promise<number>((resolve) => {
        const req = request({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/pub/b2b/v1/echo', headers: { 'content-length': String(chunk.length * 3) } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        void (async () => {
          for (let i = 0; i < 3; i++) {
            req.write(chunk);
            await eventually(() => up.open === 1);
            await new Promise((r) => setTimeout(r, 50));
            clock.advance(UPLOAD_WINDOW_MS - 1);
          }
          req.end();
        })();
      });
      assert.equal(await answer, 200);
    });
  });
}
