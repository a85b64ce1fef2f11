import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS } from '../../src/shared/clock.js';
import { TokenRequestError, TokenUnauthorizedError } from '../../src/shared/errors.js';
import { causeOf, failureReason } from '../../src/token/answers/failure-reasons.js';
import { LoopTimer } from '../../src/token/pacing/loop-timer.js';
import { GentokenPacer } from '../../src/token/pacing/gentoken-pacer.js';
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
    assert.match(failureReason('tls', 'TLS: UNABLE_TO_VERIFY_LEAF_SIGNATURE: unable to verify the first certificate; check service.caFile', 0), /^auth server certificate not trusted: TLS: UNABLE/);
    assert.match(failureReason('tls', 'TLS: ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: the server refused the handshake: it may require a client certificate', 0), /^auth server TLS handshake failed: /, 'a refused handshake is no trust problem');
    // The whole message as the token client words it (it names a client certificate too).
    assert.match(failureReason('tls', 'TLS: ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE: the server refused the handshake: it may require a client certificate (mutual TLS: set service.certFile and service.keyFile) or accept none of this client\'s TLS versions and ciphers', 0), /^auth server TLS handshake failed: /);
    assert.match(failureReason('tls', 'TLS: the auth server refused the client certificate (TLS alert: unknown ca): check service.certFile and service.keyFile with the vendor (another CA, expired or revoked)', 0), /^the auth server refused the client certificate/);
    assert.match(failureReason('tls', 'TLS: EE_KEY_TOO_SMALL: the key is too small; only the vendor can replace it', 0), /^auth server TLS handshake failed: /);
  });
});

describe('the gentoken pacer', () => {
  const pacer = (perMinute = 2) => new GentokenPacer({ maxGentokenPerMinute: perMinute, maxRetryAfterSeconds: 600, random: () => 0 });

  it('holds answer-triggered calls to the budget, never a scheduled renewal, and a rotation only until the renewal falls due', () => {
    const p = pacer(2);
    const due = 30_000;
    for (const t of [0, 1]) {
      assert.equal(p.earliest('upstream 401', t, due).at <= t, true);
      p.take('upstream 401', t, due);
    }
    assert.deepEqual(p.earliest('upstream 401', 2, due), { at: 60_000, by: 'token.maxGentokenPerMinute' });
    assert.deepEqual(p.earliest('retry', 2, due), { at: 60_000, by: 'token.maxGentokenPerMinute' });
    assert.deepEqual(p.earliest('rotation', 2, due), { at: 60_000, by: 'token.maxGentokenPerMinute' });
    assert.deepEqual(p.earliest('renewal', 2, due), { at: 2, by: undefined });
    assert.deepEqual(p.earliest('rotation', due, due), { at: due, by: undefined }, 'a rotation standing in for the due renewal');
    for (let i = 0; i < 100; i++) p.take('renewal', 3 + i, due);
    assert.equal(p.earliest('upstream 401', 60_001, due).at, 60_001, 'renewals were not counted');
  });

  it('a Retry-After binds every call, renewals included; refusals retry on the lockout-safe schedule, other failures on the transient one', () => {
    const p = pacer();
    assert.equal(p.failed('rate_limited', 120_000, 0), 120_000);
    assert.deepEqual(p.earliest('renewal', 1000, 0), { at: 120_000, by: 'Retry-After' });
    assert.equal(p.notBefore, 120_000);
    assert.deepEqual([p.failed('unauthorized', undefined, 0), p.failed('refused', undefined, 0), p.failed('rate_limited', undefined, 0)], [5000, 10_000, 20_000]);
    assert.equal(p.failed('server_error', undefined, 0), 1000, 'the transient floor: 1 s');
    p.succeeded();
    assert.equal(p.failed('unauthorized', undefined, 0), 5000, 'starts over after a success');
    assert.equal(p.longestWaitMs(), 600_000);
  });
});
