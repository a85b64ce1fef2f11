import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS } from '../../src/shared/clock.js';
import { TokenRequestError, TokenUnauthorizedError } from '../../src/shared/errors.js';
import { causeOf, failureReason } from '../../src/token/failure-reasons.js';
import { LoopTimer } from '../../src/token/loop-timer.js';
import { FakeClock } from '../helpers/fake-clock.js';

describe('the token loop\'s timer', () => {
  it('fires once at its time, says when it is due, and a new arm replaces the old one', () => {
    const clock = new FakeClock();
    const timer = new LoopTimer(clock);
    const fired: string[] = [];
    timer.arm(clock.now() + 1000, () => fired.push('a'));
    assert.equal(timer.dueAt, clock.now() + 1000);
    timer.arm(clock.now() + 2000, () => fired.push('b'));
    clock.advance(1500);
    assert.equal(fired.length, 0);
    clock.advance(500);
    assert.deepEqual(fired, ['b']);
    assert.equal(timer.dueAt, undefined);
    timer.arm(clock.now() + 10, () => fired.push('c'));
    timer.cancel();
    clock.advance(100);
    assert.equal(fired.length, 1, 'a cancelled timer never fires');
    assert.equal(clock.pending, 0);
  });

  it('reaches a time beyond the longest timer in steps, never early', () => {
    const clock = new FakeClock();
    const timer = new LoopTimer(clock);
    let fired = false;
    const at = clock.now() + 3 * MAX_TIMER_MS;
    timer.arm(at, () => (fired = true));
    clock.advance(2 * MAX_TIMER_MS);
    assert.equal(fired, false);
    assert.equal(timer.dueAt, at);
    clock.advance(MAX_TIMER_MS);
    assert.equal(fired, true);
  });
});

describe('gentoken failure reasons', () => {
  it('classes errors and words each class for /readyz', () => {
    assert.equal(causeOf(new TokenUnauthorizedError('x')), 'unauthorized');
    assert.equal(causeOf(new TokenRequestError('auth server timed out', { kind: 'timeout' })), 'timeout');
    assert.equal(causeOf(new Error('boom')), 'unreachable');
    assert.equal(failureReason('rate_limited', '', 12_500), 'auth server asked to slow down (Retry-After); no gentoken call for 13 s');
    assert.equal(failureReason('rate_limited', '', 0), 'auth server asked to slow down (HTTP 429)');
    assert.equal(failureReason('server_error', 'auth server answered HTTP 502', 0), 'auth server failed (HTTP 502)');
    assert.match(failureReason('refused', '', 0), /^gentoken refused \(HTTP 403\)/);
  });
});
