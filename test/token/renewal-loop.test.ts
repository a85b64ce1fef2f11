import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RenewalLoop } from '../../src/token/pacing/renewal-loop.js';
import { TokenState } from '../../src/token/token-state.js';
import { tokenStatus } from '../../src/token/token-view.js';
import { FakeClock, flush } from '../helpers/fake-clock.js';
import { captureLogger } from '../helpers/gentoken-server.js';

const OPTIONS = { renewAt: 0.5, maxLifetimeSeconds: 900, tokenTimeoutMs: 5000, maxRetryAfterSeconds: 600 };

function loop(clock: FakeClock, extra: Partial<typeof OPTIONS> & { maxGentokenPerMinute?: number; startJitterSeconds?: number } = {}) {
  const log = captureLogger();
  const deferred: string[] = [];
  const l = new RenewalLoop({ clock, logger: log.logger, random: () => 0, onDeferred: (t) => deferred.push(t), options: { ...OPTIONS, ...extra } });
  return { l, log, deferred };
}

describe('the renewal loop alone (fake clock)', () => {
  it('arms the renewal at renewAt of the lifetime and fires it there, not before', () => {
    const clock = new FakeClock();
    const { l } = loop(clock);
    let renewals = 0;
    const sentAt = clock.now();
    assert.equal(l.succeeded(sentAt, 100_000, () => renewals++), 50);
    assert.equal(l.nextAttemptWall(), clock.wallNow() + 50_000);
    clock.advance(49_999);
    assert.equal(renewals, 0);
    clock.advance(1);
    assert.equal(renewals, 1);
    assert.equal(l.liveness().live, false, 'nothing armed after it fired and nothing on the wire: the loop stopped');
  });

  it('arms a retry after a failure on the transient schedule, and a Retry-After binds it', () => {
    const clock = new FakeClock();
    const { l } = loop(clock);
    let retries = 0;
    const first = l.failed('server_error', undefined, () => retries++)!;
    assert.ok(first > 0);
    assert.equal(l.failed('rate_limited', 120_000, () => retries++), 120);
    assert.equal(l.notBefore, clock.now() + 120_000);
    clock.advance(119_999);
    assert.equal(retries, 0);
    clock.advance(1);
    assert.equal(retries, 1);
  });

  it('holds an answer-triggered call to the budget (logged once, counted each time), never the scheduled renewal', async () => {
    const clock = new FakeClock();
    const { l, log, deferred } = loop(clock, { maxGentokenPerMinute: 1 });
    await l.gate('upstream 401');
    assert.equal(l.mayCallNow('upstream 401', clock.now()), false);
    assert.equal(l.mayCallNow('upstream 401', clock.now()), false);
    assert.deepEqual(deferred, ['upstream_401', 'upstream_401']);
    assert.equal(log.lines.filter((x) => x.includes('gentoken call deferred')).length, 1);
    assert.equal(l.mayCallNow('renewal', clock.now()), true);
    let passed = false;
    void l.gate('retry').then(() => (passed = true));
    await flush();
    assert.equal(passed, false);
    assert.ok(l.gatedUntil !== undefined && l.gatedUntil > clock.now());
    assert.equal(l.liveness().live, true, 'a held-back call is scheduled');
    clock.advance(60_000);
    await flush();
    assert.equal(passed, true);
    assert.equal(l.gatedUntil, undefined);
  });

  it('stop wakes a held-back call with an error and disarms the timer', async () => {
    const clock = new FakeClock();
    const { l } = loop(clock, { maxGentokenPerMinute: 1 });
    await l.gate('retry');
    const held = l.gate('retry');
    await flush();
    l.stop();
    await assert.rejects(held, /stopped/);
    assert.equal(clock.pending, 0);
  });

  it('says the loop is stuck when a request is on the wire far past its deadline', () => {
    const clock = new FakeClock();
    const { l } = loop(clock);
    l.requestSentAt = clock.now();
    clock.advance(5_000 + 60_000);
    assert.equal(l.liveness().live, true);
    clock.advance(1);
    assert.match(l.liveness().reason ?? '', /in flight for 65 s, far beyond its deadline/);
  });
});

describe('the token state alone', () => {
  const result = { token: 'secret-token-value-0123', refreshToken: null, aliveSecondsTtl: 100 };
  const creds = { apiKey: 'k', password: 'p', version: 1 };

  it('is usable until min(5 s, 10 %) before expiry, not while marked bad; a failure is kept until a success', () => {
    const s = new TokenState();
    assert.equal(s.usable(0), undefined);
    const t = s.obtained(result as never, creds, 1000, 5000, 100);
    assert.equal(t.generation, 1);
    assert.equal(s.usable(1000 + 95_000 - 1), t);
    assert.equal(s.usable(1000 + 95_000), undefined);
    s.markBad();
    assert.equal(s.usable(2000), undefined);
    s.unmarkBad(t);
    assert.equal(s.usable(2000), t);
    s.failed('timeout', '', 10);
    s.failed('server_error', 'auth server answered HTTP 502', 20);
    assert.deepEqual(s.failure, { cause: 'server_error', detail: 'auth server answered HTTP 502', atWall: 20, sinceWall: 10, count: 2 });
    s.obtained(result as never, creds, 3000, 7000, 100);
    assert.equal(s.failure, undefined);
  });

  it('keeps superseded as a state with a time; the view shows it within its window and warns while it holds', () => {
    const s = new TokenState();
    const token = s.obtained(result as never, creds, 0, Date.UTC(2026, 0, 1), 100);
    s.supersededAt(Date.UTC(2026, 0, 1, 0, 1), 3, true);
    const base = {
      readiness: { ready: true }, liveness: { live: true }, token, failure: undefined, failureMessage: undefined,
      superseded: s.superseded, supersededWindowMs: 600_000, suspect: undefined, warnings: [], nextAttemptWall: undefined, now: 10_000,
    };
    const inside = tokenStatus({ ...base, wallNow: Date.UTC(2026, 0, 1, 0, 5) });
    assert.deepEqual(inside.superseded, { lastAt: '2026-01-01T00:01:00.000Z', inWindow: 3, windowMinutes: 10, total: 1, likelyAnotherHolder: true });
    assert.match(inside.warnings[0] ?? '', /3 in 10 min, the last at 2026-01-01T00:01:00\.000Z\): another process probably obtains tokens with the same ApiKey/);
    assert.equal(inside.ageSeconds, 10);
    assert.equal(inside.fingerprint, token.fingerprint);
    assert.ok(!JSON.stringify(inside).includes(result.token), 'never the token itself');
    const later = tokenStatus({ ...base, wallNow: Date.UTC(2026, 0, 1, 0, 11, 1) });
    assert.equal(later.superseded, undefined, 'history once the window has passed');
    assert.deepEqual(later.warnings, []);
  });
});
