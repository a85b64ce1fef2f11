import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenRequestError, TokenUnauthorizedError } from '../../src/shared/errors.js';
import { SecretSet } from '../../src/shared/secrets.js';
import type { AuthResult, Credentials } from '../../src/token/token-client.js';
import { TokenManager, type GentokenCause, type GentokenTrigger, type TokenManagerOptions } from '../../src/token/token-manager.js';
import type { Clock, TimerHandle } from '../../src/shared/clock.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLogger } from '../helpers/gentoken-server.js';

type Answer = () => AuthResult | Error;

/** A FakeClock whose next timer can be dropped: the loop's timer "never fires", as in a stuck event loop or a lost handle. */
class DroppingClock extends FakeClock implements Clock {
  dropNext = false;
  override setTimeout(fn: () => void, ms: number): TimerHandle {
    if (this.dropNext) {
      this.dropNext = false;
      return super.setTimeout(() => undefined, ms);
    }
    return super.setTimeout(fn, ms);
  }
}

/** A manager on a fake clock with an in-memory gentoken client (no sockets: the timing alone is under test). */
function setup(options: Partial<TokenManagerOptions> = {}, random: () => number = () => 0.5, clock = new DroppingClock()) {
  const calls: Array<{ at: number; apiKey: string }> = [];
  let answer: Answer = () => ({ token: `tkn-${calls.length}-abcdef`, refreshToken: null, aliveSecondsTtl: 900 });
  const causes: GentokenCause[] = [];
  const deferred: GentokenTrigger[] = [];
  let creds: Credentials = { apiKey: 'key-1', password: 'pw-secret-1', version: 1 };
  const log = captureLogger();
  const manager = new TokenManager({
    client: {
      requestToken: async (c) => {
        calls.push({ at: clock.now(), apiKey: c.apiKey });
        const a = answer();
        if (a instanceof Error) throw a;
        return a;
      },
    },
    credentials: { current: () => creds },
    clock, logger: log.logger, secrets: new SecretSet(), random,
    onFailure: (c) => causes.push(c),
    onDeferred: (t) => deferred.push(t),
    options: { renewAt: 0.66, maxLifetimeSeconds: 900, tokenTimeoutMs: 10_000, maxGentokenPerMinute: 12, maxRetryAfterSeconds: 600, ...options },
  });
  return {
    clock, manager, calls, causes, deferred, log,
    set answer(a: Answer) { answer = a; },
    rotateCredentials(n: number) { creds = { apiKey: `key-${n}`, password: `pw-secret-${n}`, version: creds.version + 1 }; },
    advance: (ms: number) => clock.advanceAsync(ms),
  };
}

const rateLimited = (retryAfter: string) => () => new TokenRequestError('auth server asked to slow down (HTTP 429, Retry-After)', { upstreamStatus: 429, kind: 'rate_limited', retryAfter });
const maxInAnyMinute = (times: number[]) => Math.max(0, ...times.map((t) => times.filter((u) => u >= t && u < t + 60_000).length));

describe('gentoken budget in the manager', () => {
  it('holds under a 401 storm from 200 concurrent requests, for ten minutes', async () => {
    const t = setup();
    t.manager.start();
    await t.advance(0);
    // A wave every 3 s: far enough apart that the 401 path's own slow-down does not engage, so
    // only the budget stands between the waves and 20 gentoken calls a minute.
    for (let wave = 0; wave < 200; wave++) {
      const generation = t.manager.current()?.generation ?? 1;
      for (let i = 0; i < 200; i++) void t.manager.invalidate(generation).catch(() => undefined);
      await t.advance(3_000);
    }
    const times = t.calls.map((c) => c.at);
    assert.ok(times.length > 12, `${times.length} calls: the storm did cause renewals`);
    assert.ok(maxInAnyMinute(times) <= 12, `at most 12 in any minute, saw ${maxInAnyMinute(times)}`);
    await t.manager.stop();
  });

  it('holds under credential flapping, counts the deferred calls by trigger and logs once per episode', async () => {
    const t = setup();
    t.manager.start();
    await t.advance(0);
    for (let i = 0; i < 100; i++) {
      t.rotateCredentials(i % 2 === 0 ? 2 : 1);
      void t.manager.rotate();
      await t.advance(500);
    }
    const times = t.calls.map((c) => c.at);
    assert.ok(maxInAnyMinute(times) <= 12, `at most 12 in any minute, saw ${maxInAnyMinute(times)}`);
    assert.ok(t.deferred.includes('rotation'));
    assert.ok(t.deferred.every((d) => d === 'rotation'));
    // While a rotation waits for the budget with no usable token, requests are told why at once.
    const held = t.manager.status();
    if (!held.ready) assert.match(held.reason ?? '', /held back by token\.maxGentokenPerMinute|no token yet|expired/);
    const lines = t.log.lines.filter((l) => l.includes('gentoken call deferred'));
    assert.equal(lines.length, 1, 'one line for the whole episode');
    assert.match(lines[0]!, /token\.maxGentokenPerMinute/);
    assert.ok(!t.log.text().includes('pw-secret'), 'no password in the log');
    await t.manager.stop();
  });
});

describe('Retry-After in the manager', () => {
  for (const [name, value] of [['seconds', '120'], ['HTTP-date', 'Sun, 22 Nov 2026 12:02:00 GMT']] as const) {
    it(`honours a Retry-After of ${name} for every trigger: retry, renewal, 401, rotation`, async () => {
      // The fake clock starts at wall 2026-11-22 12:00:00 UTC, so the date is 120 s ahead too.
      const t = setup({}, () => 0);
      t.answer = rateLimited(value);
      t.manager.start();
      await t.advance(0);
      assert.equal(t.calls.length, 1);
      const firstAt = t.calls[0]!.at;
      assert.match(t.manager.status().reason ?? '', /asked to slow down \(Retry-After\); no gentoken call for 120 s/);
      t.answer = () => ({ token: 'tkn-ok-abcdef', refreshToken: null, aliveSecondsTtl: 900 });
      // A 401 and a rotation during the wait start no call.
      void t.manager.invalidate(0).catch(() => undefined);
      t.rotateCredentials(2);
      void t.manager.rotate();
      await t.advance(119_999);
      assert.equal(t.calls.length, 1, 'nothing before the Retry-After ends');
      await t.advance(1);
      assert.ok(t.calls.length >= 2);
      assert.equal(t.calls[1]!.at - firstAt, 120_000);
      // Now a renewal answered with Retry-After: the next call waits again.
      const renewal = t.calls.length;
      t.answer = rateLimited('300');
      await t.advance(900_000);
      const after = t.calls.slice(renewal);
      assert.ok(after.length >= 2);
      assert.ok(after[1]!.at - after[0]!.at >= 300_000, 'the retry after a renewal waited for its Retry-After');
      await t.manager.stop();
    });
  }

  it('caps a Retry-After at token.maxRetryAfterSeconds', async () => {
    const t = setup({ maxRetryAfterSeconds: 30 }, () => 0);
    t.answer = rateLimited('86400');
    t.manager.start();
    await t.advance(0);
    await t.advance(30_000);
    assert.equal(t.calls.length, 2);
    assert.equal(t.calls[1]!.at - t.calls[0]!.at, 30_000);
    await t.manager.stop();
  });
});

describe('start spread', () => {
  it('50 managers started at once on one clock spread their first calls over token.startJitterSeconds', async () => {
    const clock = new DroppingClock();
    let seed = 42;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const fleet = Array.from({ length: 50 }, () => setup({ startJitterSeconds: 60 }, random, clock));
    const t0 = clock.now();
    for (const m of fleet) m.manager.start();
    await clock.advanceAsync(0);
    assert.equal(fleet.filter((m) => m.calls.length > 0).length, 0, 'nobody calls at once');
    assert.equal(fleet[0]!.manager.liveness().live, true, 'a delayed start is scheduled, hence live');
    await clock.advanceAsync(60_000);
    const firsts = fleet.map((m) => m.calls[0]!.at - t0);
    assert.ok(firsts.every((d) => d >= 0 && d < 60_000));
    for (let s = 0; s < 60_000; s += 10_000) {
      const n = firsts.filter((d) => d >= s && d < s + 10_000).length;
      assert.ok(n >= 3 && n <= 16, `${n} first calls in [${s}, ${s + 10_000}) ms`);
    }
    for (const m of fleet) await m.manager.stop();
  });

  it('0 (the default) calls at once', async () => {
    const t = setup({ startJitterSeconds: 0 });
    t.manager.start();
    await t.advance(0);
    assert.equal(t.calls.length, 1);
    await t.manager.stop();
  });
});

describe('liveness of the token loop', () => {
  for (const [name, answer] of [
    ['an unreachable vendor', () => new TokenRequestError('auth server unreachable: ECONNREFUSED', { kind: 'connection_refused' })],
    ['a vendor rejecting the credentials', () => new TokenUnauthorizedError('ApiKey blocked')],
  ] as const) {
    it(`stays live for ${name} over hours, and is not ready`, async () => {
      const t = setup();
      t.answer = answer;
      t.manager.start();
      for (let i = 0; i < 240; i++) {
        await t.advance(30_000);
        assert.deepEqual(t.manager.liveness(), { live: true });
      }
      assert.equal(t.manager.status().ready, false);
      await t.manager.stop();
    });
  }

  it('fails when the loop\'s timer is dropped, and says why', async () => {
    const t = setup();
    t.manager.start();
    await t.advance(0);
    assert.deepEqual(t.manager.liveness(), { live: true });
    // The renewal fires and fails; the retry timer it arms is dropped and never fires.
    t.clock.dropNext = true;
    t.answer = () => new TokenRequestError('auth server unreachable: ECONNREFUSED', { kind: 'connection_refused' });
    await t.advance(600_000);
    const callsThen = t.calls.length;
    await t.advance(120_000);
    assert.equal(t.calls.length, callsThen, 'the loop is stuck');
    const l = t.manager.liveness();
    assert.equal(l.live, false);
    assert.match(l.reason ?? '', /overdue: the token loop is stuck/);
    await t.manager.stop();
    assert.deepEqual(t.manager.liveness(), { live: true }, 'a stopped manager is shutting down, not stuck');
  });

  it('wall-clock times: expiry and next refresh (the timestamp gauges render them)', async () => {
    const t = setup({}, () => 0);
    t.manager.start();
    await t.advance(0);
    const v = t.manager.view();
    const wall = t.clock.wallNow();
    assert.equal(v.expiresAt, new Date(wall + 900_000).toISOString());
    assert.equal(v.nextAttemptAt, new Date(wall + 594_000).toISOString());
    await t.manager.stop();
  });
});

describe('requests while an attempt is held back', () => {
  it('acquire() rejects at once with the reason instead of waiting for a held-back retry', async () => {
    const t = setup({ maxGentokenPerMinute: 1 }, () => 0);
    t.answer = () => new TokenRequestError('auth server failed (HTTP 500)', { upstreamStatus: 500, kind: 'server_error' });
    t.manager.start();
    await t.advance(0);
    await t.advance(1_000); // the retry is due after 250 ms, held back by the budget until 60 s
    assert.equal(t.calls.length, 1);
    assert.deepEqual(t.deferred, ['retry']);
    const started = t.clock.now();
    await assert.rejects(Promise.resolve(t.manager.acquire()), { message: /^auth server failed/ });
    assert.equal(t.clock.now(), started, 'no wait');
    t.answer = () => ({ token: 'tkn-ok-abcdef', refreshToken: null, aliveSecondsTtl: 900 });
    await t.advance(59_000);
    assert.equal(t.calls.length, 2);
    assert.equal(t.manager.status().ready, true);
    await t.manager.stop();
  });
});

describe('scheduled renewals and the budget', () => {
  it('renewals of 2-second tokens are never held back by the budget: valid for ten minutes at 1 call a minute, noted once in the log', async () => {
    const t = setup({ maxGentokenPerMinute: 1 }, () => 0.5);
    t.answer = () => ({ token: `tkn-${t.calls.length}-abcdef`, refreshToken: null, aliveSecondsTtl: 2 });
    t.manager.start();
    await t.advance(0);
    let notReady = 0;
    for (let i = 0; i < 6000; i++) {
      await t.advance(100);
      if (!t.manager.status().ready) notReady++;
    }
    assert.equal(notReady, 0, 'the token never lapsed');
    assert.ok(t.calls.length > 400, `${t.calls.length} renewals in ten minutes`);
    assert.deepEqual(t.deferred, [], 'none held back');
    const notes = t.log.lines.filter((l) => l.includes('the budget does not hold scheduled renewals back'));
    assert.equal(notes.length, 1);
    await t.manager.stop();
  });

  it('a 401 held back by the budget waits for a scheduled renewal due within 2 s and is replayed with its token; one due later goes back at once', async () => {
    const t = setup({ maxGentokenPerMinute: 1, maxLifetimeSeconds: 10 }, () => 0);
    t.manager.start();
    await t.advance(0); // the start spends the budget; the renewal is due at 6.6 s
    t.manager.answered(1, 200, '/ok');
    await t.advance(1_000);
    const early = t.clock.now();
    assert.equal(await t.manager.invalidate(1, '/a'), undefined, '5.6 s before the renewal: passed back');
    assert.equal(t.clock.now(), early, 'at once');
    await t.advance(4_000);
    const waiting = t.manager.invalidate(1, '/b');
    await t.advance(1_000);
    assert.equal(t.calls.length, 1, 'no call of its own: the budget holds it back');
    await t.advance(600);
    const replayWith = await waiting;
    assert.equal(replayWith?.generation, 2, 'replayed with the scheduled renewal\'s token');
    assert.equal(t.calls.length, 2, 'the renewal is the only call');
    assert.equal(t.manager.current()?.generation, 2);
    await t.manager.stop();
    assert.equal(t.clock.pending, 0, 'no waiter outlives stop()');
  });

  it('a rotation held back by the budget keeps the current token in use and goes out when the renewal falls due', async () => {
    const t = setup({ maxGentokenPerMinute: 1, maxLifetimeSeconds: 10 }, () => 0);
    t.manager.start();
    await t.advance(0);
    t.rotateCredentials(2);
    void t.manager.rotate();
    await t.advance(1_000);
    assert.equal(t.calls.length, 1, 'the rotation waits for the budget');
    assert.ok(!(t.manager.acquire() instanceof Promise), 'requests keep the current token, synchronously');
    const at = t.clock.now();
    assert.equal(await t.manager.invalidate(1, '/x'), undefined, 'a 401 meanwhile is passed back, not held for the waiting rotation');
    assert.equal(t.clock.now(), at);
    assert.equal(t.manager.current()?.generation, 1, 'and the token stays in use');
    await t.advance(5_600); // the renewal is due at 6.6 s
    assert.equal(t.calls.length, 2);
    assert.equal(t.calls[1]!.apiKey, 'key-2');
    for (let i = 0; i < 100; i++) {
      await t.advance(500);
      assert.equal(t.manager.status().ready, true);
    }
    await t.manager.stop();
  });
});
