import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBackoff, longestDelayMs, TRANSIENT_BACKOFF, UNAUTHORIZED_BACKOFF } from '../../src/token/pacing/backoff.js';

describe('backoff', () => {
  it('doubles the ceiling up to the cap when the draw is maximal', () => {
    const b = createBackoff({ ...TRANSIENT_BACKOFF, random: () => 0.999999 });
    const delays = Array.from({ length: 9 }, () => b.next());
    assert.deepEqual(delays, [1000, 1999, 3999, 7999, 15999, 31999, 59999, 59999, 59999]);
    assert.equal(b.attempts, 9);
  });

  it('never goes below the floor, so a zero draw is not a tight loop: transient retries start at 1 s, as the docs say', () => {
    const fast = createBackoff({ ...TRANSIENT_BACKOFF, random: () => 0 });
    for (let i = 0; i < 20; i++) assert.equal(fast.next(), 1000);
  });

  it('after a refused login: 5 s doubling to 5 min, jitter only upward (never sooner than the schedule)', () => {
    const low = createBackoff({ ...UNAUTHORIZED_BACKOFF, random: () => 0 });
    const high = createBackoff({ ...UNAUTHORIZED_BACKOFF, random: () => 0.999999 });
    const schedule = [5000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000, 300_000];
    assert.deepEqual(schedule.map(() => low.next()), schedule);
    assert.deepEqual(schedule.map(() => high.next()), schedule.map((d) => Math.floor(d * (1 + 0.2 * 0.999999))));
    assert.equal(longestDelayMs(UNAUTHORIZED_BACKOFF), 360_000);
    assert.equal(longestDelayMs(TRANSIENT_BACKOFF), 60_000);
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
    assert.equal(b.next(), 1000);
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
