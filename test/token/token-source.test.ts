import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SecretSet } from '../../src/shared/secrets.js';
import { RenewalLoop } from '../../src/token/pacing/renewal-loop.js';
import type { AuthResult } from '../../src/token/token-client.js';
import { TokenSource } from '../../src/token/token-source.js';
import { TokenState } from '../../src/token/token-state.js';
import { FakeClock, flush } from '../helpers/fake-clock.js';
import { captureLogger } from '../helpers/gentoken-server.js';

/** The source alone on the fake clock, with a gentoken client whose answers the test releases by hand. */
function setup(options: { maxGentokenPerMinute?: number } = {}) {
  const clock = new FakeClock();
  const log = captureLogger();
  const state = new TokenState();
  const loop = new RenewalLoop({
    clock, logger: log.logger, random: () => 0,
    options: { renewAt: 0.5, maxLifetimeSeconds: 900, tokenTimeoutMs: 5_000, maxRetryAfterSeconds: 600, ...options },
  });
  const pending: Array<(ttl: number) => void> = [];
  let calls = 0;
  const obtained: string[] = [];
  const source = new TokenSource({
    client: {
      requestToken: () => {
        calls++;
        return new Promise<AuthResult>((resolve) => pending.push((ttl) => resolve({ token: `token-${calls}`, aliveSecondsTtl: ttl })));
      },
    },
    credentials: { current: () => ({ apiKey: 'k', password: 'p', version: 1 }) },
    clock, logger: log.logger, secrets: new SecretSet(), state, loop,
    maxLifetimeSeconds: 900, tokenTimeoutMs: 5_000,
    onObtained: (token, trigger) => obtained.push(`${trigger}:${token.generation}`),
  });
  /** Answers the oldest gentoken call on the wire with a token living `ttl` seconds. */
  const answer = async (ttl = 100): Promise<void> => {
    await flush();
    pending.shift()!(ttl);
    await flush();
  };
  return { clock, loop, source, state, answer, calls: () => calls, obtained };
}

describe('the token source alone (fake clock)', () => {
  it('is the one single flight: every trigger asking meanwhile joins the attempt on the wire', async () => {
    const { source, answer, calls, obtained } = setup();
    const first = source.acquire('start');
    assert.equal(source.acquire('upstream 401'), first);
    assert.equal(source.acquire('rotation'), first);
    assert.equal(source.inflight()?.attempt, first);
    assert.equal(source.inflight()?.held, false);
    await answer();
    assert.equal((await first).generation, 1);
    assert.equal(calls(), 1);
    assert.deepEqual(obtained, ['start:1'], 'the trigger that started it is the one named');
    assert.equal(source.inflight(), undefined);
    assert.equal(source.current()?.generation, 1);
  });

  it('the renewal loop\'s timer asks the source: the renewal at renewAt of the lifetime is its attempt, and a 401 then joins it', async () => {
    const { clock, source, answer, calls, obtained } = setup();
    const startedAt = clock.now();
    source.start();
    await answer(100);
    assert.equal(source.renewDueAt() - startedAt, 50_000);
    clock.advance(50_000);
    await flush();
    assert.equal(calls(), 2, 'the scheduled renewal went out');
    const joined = source.acquire('upstream 401');
    await answer(100);
    assert.equal((await joined).generation, 2);
    assert.equal(calls(), 2, 'no second call for the 401');
    assert.deepEqual(obtained, ['start:1', 'renewal:2']);
  });

  it('paces the calls answers ask for: a 401 within the budget, a judgement only while half of it is left', async () => {
    const { clock, source, answer } = setup({ maxGentokenPerMinute: 4 });
    const now = clock.now();
    assert.equal(source.mayCall('upstream 401', now), true);
    assert.equal(source.mayCall('judgement', now), true);
    for (let i = 0; i < 2; i++) {
      const p = source.acquire('upstream 401');
      await answer();
      await p;
    }
    assert.equal(source.mayCall('upstream 401', clock.now()), true, 'two of four left');
    assert.equal(source.mayCall('judgement', clock.now()), false, 'a judgement would leave less than half');
  });

  it('an attempt the budget holds back is in flight and held; bounded() waits at most the token timeout', async () => {
    const { clock, source, answer } = setup({ maxGentokenPerMinute: 1 });
    const p = source.acquire('retry');
    await answer();
    await p;
    const held = source.acquire('retry');
    await flush();
    assert.equal(source.inflight()?.held, true);
    const waited = source.bounded(held);
    clock.advance(5_000);
    await assert.rejects(waited, /timed out waiting for a token/);
    assert.match(source.reason(), /^gentoken calls held back by token.maxGentokenPerMinute; next in \d+ s$/);
  });
});
