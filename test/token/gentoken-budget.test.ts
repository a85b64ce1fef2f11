import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createGentokenBudget } from '../../src/token/pacing/gentoken-budget.js';
import { GentokenPacer } from '../../src/token/pacing/gentoken-pacer.js';
import { parseRetryAfter } from '../../src/token/pacing/retry-after.js';

describe('gentoken budget', () => {
  it('allows perMinute calls in any 60 s, then says how long to wait', () => {
    const b = createGentokenBudget(3);
    for (const t of [0, 10, 20]) {
      assert.equal(b.waitMs(t), 0);
      b.take(t);
    }
    assert.equal(b.waitMs(30), 59_970, 'the oldest call leaves the window at 60 000');
    assert.equal(b.waitMs(60_000), 0);
    b.take(60_000);
    assert.equal(b.waitMs(60_001), 9, 'sliding: the call at 10 leaves at 60 010');
  });

  it('says how many calls are left in the window', () => {
    const b = createGentokenBudget(3);
    assert.equal(b.remaining(0), 3);
    b.take(0);
    b.take(10);
    assert.equal(b.remaining(20), 1);
    assert.equal(b.remaining(60_000), 2, 'the call at 0 has left the window');
  });

  it('judgements may use the budget only while they leave half of it (rounded up) to revocations and retries', () => {
    const pacer = (perMinute: number) => new GentokenPacer({ maxGentokenPerMinute: perMinute, maxRetryAfterSeconds: 600, random: () => 0 });
    const p = pacer(12);
    let judged = 0;
    while (p.judgementAllowed(0)) {
      p.take('upstream 401', 0, Infinity);
      judged++;
    }
    assert.equal(judged, 6, 'six of twelve; six are left for revocations');
    assert.equal(p.earliest('upstream 401', 0, Infinity).at, 0, 'a revocation still goes out at once');
    assert.equal(pacer(1).judgementAllowed(0), false, 'a budget of one is all for revocations');
    assert.equal(pacer(3).judgementAllowed(0), true);
    assert.equal(new GentokenPacer({ maxRetryAfterSeconds: 600, random: () => 0 }).judgementAllowed(0), true, 'no budget (tests only)');
  });

  it('refuses a budget that is not a positive integer', () => {
    for (const n of [0, -1, 1.5, Number.NaN]) assert.throws(() => createGentokenBudget(n), RangeError);
  });
});

describe('Retry-After', () => {
  const now = Date.UTC(2026, 10, 22, 12, 0, 0);
  it('reads delay-seconds and an HTTP-date, capped and never negative', () => {
    assert.equal(parseRetryAfter('120', now, 600_000), 120_000);
    assert.equal(parseRetryAfter(' 7 ', now, 600_000), 7_000);
    assert.equal(parseRetryAfter('99999', now, 600_000), 600_000, 'capped');
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 12:01:30 GMT', now, 600_000), 90_000);
    assert.equal(parseRetryAfter('Sun, 22 Nov 2026 11:00:00 GMT', now, 600_000), 0, 'a date in the past: no wait');
    assert.equal(parseRetryAfter('Mon, 22 Nov 2027 11:00:00 GMT', now, 600_000), 600_000);
  });

  it('ignores what is absent or malformed', () => {
    for (const v of [undefined, '', 'soon', '-5', '1.5', '12abc', 'tomorrow 5']) assert.equal(parseRetryAfter(v, now, 600_000), undefined, String(v));
  });
});
