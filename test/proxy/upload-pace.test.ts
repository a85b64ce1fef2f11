import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UploadPaces, UPLOAD_CHECK_MS, UPLOAD_GRACE_MS } from '../../src/proxy/body/upload-pace.js';
import { FakeClock } from '../helpers/fake-clock.js';

/**
 * Drives one upload on a fake clock: `chunk` bytes every `everyMs`, for `forMs`. Returns the
 * clock time (ms since the start) at which it was cut, or undefined.
 */
function run(rate: number, chunk: number, everyMs: number, forMs: number): number | undefined {
  const clock = new FakeClock(0);
  let cutAt: number | undefined;
  const pace = new UploadPaces(rate, clock).watch(() => { cutAt = clock.now(); })!;
  for (let t = 0; t < forMs && cutAt === undefined; t += everyMs) {
    if (chunk > 0) pace.progress(chunk);
    clock.advance(everyMs);
  }
  pace.done();
  return cutAt;
}

describe('the minimum upload rate', () => {
  it('never cuts a steady upload just above the rate, whatever its chunk size', () => {
    // 1.1 KB/s in chunks of up to 8 KiB (one every 7.3 s). Fixed 10 s windows that threw away a
    // window's excess cut the 4 KiB one after 17 s.
    for (const chunk of [100, 1126, 4096, 8192]) {
      const everyMs = Math.floor((chunk / 1126) * 1000);
      assert.equal(run(1024, chunk, everyMs, 600_000), undefined, `${chunk}-byte chunks every ${everyMs} ms`);
    }
  });

  it('cuts an upload just below the rate once it is 10 s behind, within a second', () => {
    // 900 bytes/s: 124 bytes/s short, the 10,240-byte credit lasts ~82.6 s.
    const cutAt = run(1024, 900, 1000, 600_000);
    assert.ok(cutAt !== undefined && cutAt >= 82_000 && cutAt <= 84_000, `cut at ${cutAt} ms`);
  });

  it('cuts an upload that sends nothing between 10 and 11 s, and one that stalls after a burst as soon', () => {
    const silent = run(1024, 0, 100, 60_000);
    assert.ok(silent !== undefined && silent > UPLOAD_GRACE_MS && silent <= UPLOAD_GRACE_MS + UPLOAD_CHECK_MS, `silent: cut at ${silent} ms`);
    // 1 MiB at once, then nothing: early bytes do not buy minutes of trickle.
    const clock = new FakeClock(0);
    let cutAt: number | undefined;
    const pace = new UploadPaces(1024, clock).watch(() => { cutAt = clock.now(); })!;
    pace.progress(1 << 20);
    clock.advance(60_000);
    assert.ok(cutAt !== undefined && cutAt <= UPLOAD_GRACE_MS + 2 * UPLOAD_CHECK_MS, `after a burst: cut at ${cutAt} ms`);
  });

  it('stops watching once done, and is off at 0 bytes/s', () => {
    const clock = new FakeClock(0);
    const pace = new UploadPaces(1024, clock).watch(() => assert.fail('cut after done'))!;
    pace.done();
    clock.advance(60_000);
    assert.equal(clock.pending, 0, 'no timer left');
    assert.equal(new UploadPaces(0, clock).watch(() => undefined), undefined);
  });
});
