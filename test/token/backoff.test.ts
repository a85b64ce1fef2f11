import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBackoff, TRANSIENT_BACKOFF, UNAUTHORIZED_BACKOFF } from '../../src/token/backoff.js';

describe('backoff', () => {
  it('doubles the ceiling up to the cap when the draw is maximal', () => {
    const b = createBackoff({ ...UNAUTHORIZED_BACKOFF, random: () => 0.999999 });
    const delays = Array.from({ length: 9 }, () => b.next());
    assert.deepEqual(delays, [4999, 9999, 19999, 39999, 79999, 159999, 299999, 299999, 299999]);
    assert.equal(b.attempts, 9);
  });

  it('never goes below the floor, so a zero draw is not a tight loop', () => {
    const fast = createBackoff({ ...TRANSIENT_BACKOFF, random: () => 0 });
    const slow = createBackoff({ ...UNAUTHORIZED_BACKOFF, random: () => 0 });
    for (let i = 0; i < 20; i++) {
      assert.equal(fast.next(), 250);
      assert.equal(slow.next(), 1000);
    }
  });

  it('draws every delay uniformly within [floor, min(cap, base * 2^n)]', () => {
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    const b = createBackoff({ ...TRANSIENT_BACKOFF, random });
    for (let n = 0; n < 100; n++) {
      const d = b.next();
      assert.ok(d >= 250 && d <= Math.min(60_000, 1000 * 2 ** n), `attempt ${n}: ${d}`);
    }
  });

  it('starts over after reset', () => {
    const b = createBackoff({ ...TRANSIENT_BACKOFF, random: () => 0.5 });
    b.next();
    b.next();
    b.next();
    b.reset();
    assert.equal(b.attempts, 0);
    assert.equal(b.next(), 500);
  });

  it('tolerates a random source outside [0, 1)', () => {
    const b = createBackoff({ baseMs: 100, capMs: 1000, minMs: 10, random: () => 7 });
    assert.equal(b.next(), 100);
    const c = createBackoff({ baseMs: 100, capMs: 1000, minMs: 10, random: () => -1 });
    assert.equal(c.next(), 10);
  });

  it('rejects an inconsistent policy', () => {
    assert.throws(() => createBackoff({ baseMs: 0, capMs: 10, minMs: 0 }), RangeError);
    assert.throws(() => createBackoff({ baseMs: 10, capMs: 5, minMs: 0 }), RangeError);
    assert.throws(() => createBackoff({ baseMs: 10, capMs: 50, minMs: 60 }), RangeError);
  });
});
