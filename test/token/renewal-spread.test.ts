import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SecretSet } from '../../src/shared/secrets.js';
import { RenewalLoop } from '../../src/token/pacing/renewal-loop.js';
import { GentokenSlots } from '../../src/token/pacing/gentoken-slots.js';
import type { AuthResult, Credentials } from '../../src/token/token-client.js';
import { TokenManager } from '../../src/token/token-manager.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLogger } from '../helpers/gentoken-server.js';

/** Deterministic uniform numbers in [0, 1). */
function seeded(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

const SETS = 1000;
const TTL_SECONDS = 20;
const GENTOKEN_MS = 20;
const MINUTES = 2;

/**
 * 1,000 credential sets started at once, sharing 8 gentoken slots, against a gentoken that answers
 * in 20 ms of the fake clock with 20 s tokens (renewAt 0.66: a renewal about every 13 s). Returns
 * the number of gentoken calls in each second.
 */
async function simulate(spreadFirstRenewal: boolean): Promise<{ calls: number; perSecond: Map<number, number>; readyAfterMs: number }> {
  const clock = new FakeClock(0);
  const perSecond = new Map<number, number>();
  let calls = 0;
  const client = {
    requestToken(_c: Credentials): Promise<AuthResult> {
      calls++;
      const second = Math.floor(clock.now() / 1000);
      perSecond.set(second, (perSecond.get(second) ?? 0) + 1);
      return new Promise((resolve) => clock.setTimeout(() => resolve({ token: `tok-${calls}`, refreshToken: null, aliveSecondsTtl: TTL_SECONDS }), GENTOKEN_MS));
    },
  };
  const slots = new GentokenSlots(8);
  const random = seeded(42);
  const logger = captureLogger().logger;
  const managers = Array.from({ length: SETS }, (_, n) => {
    const creds: Credentials = { apiKey: `key-${n}`, password: 'pw', version: 1 };
    return new TokenManager({
      client, credentials: { current: () => creds }, clock, logger, secrets: new SecretSet(), random, slots,
      options: { renewAt: 0.66, maxLifetimeSeconds: 900, tokenTimeoutMs: 10_000, spreadFirstRenewal },
    });
  });
  managers.forEach((m) => m.start());
  // One turn of the event loop per fired timer: the token source's steps are promise callbacks.
  const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
  let readyAfterMs = Infinity;
  for (let t = 0; t < MINUTES * 60_000; t += 500) {
    await clock.advanceAsync(500, settle);
    if (readyAfterMs === Infinity && managers.every((m) => m.current())) readyAfterMs = clock.now();
  }
  await Promise.all(managers.map((m) => m.stop()));
  return { calls, perSecond, readyAfterMs };
}

function peak(perSecond: Map<number, number>, from: number, to = Infinity): number {
  return Math.max(0, ...[...perSecond].filter(([s]) => s >= from && s < to).map(([, n]) => n));
}

describe('renewals of many credential sets started at once (fake clock)', () => {
  it('1,000 sets with 20 s tokens: start-up bounded by the slots, renewals spread over the period instead of in waves', async () => {
    const { perSecond, readyAfterMs } = await simulate(true);
    assert.ok(readyAfterMs <= 3_000, `every set ready within 3 s (1,000 × 20 ms / 8 = 2.5 s), got ${readyAfterMs} ms`);
    // 8 calls at a time, 20 ms each: never more than 400 in a second, even at start-up.
    assert.ok(peak(perSecond, 0) <= 400, `largest second ${peak(perSecond, 0)}`);
    // After start-up: about 1,000 / 12.5 s = 80 a second on average. Without the spread the
    // renewals come back in waves of 300 to 400 in a second, with empty seconds between (below).
    const steady = peak(perSecond, 5);
    assert.ok(steady <= 200, `largest second after start-up: ${steady} (mean about 80)`);
    const quiet = [...Array(MINUTES * 60 - 5).keys()].map((s) => s + 5).filter((s) => !perSecond.has(s));
    assert.deepEqual(quiet, [], 'no second without renewals once spread');
  });

  it('with every renewal jittered by only its last 10 %, the same sets renew in waves (why the first renewal is spread)', async () => {
    const { perSecond } = await simulate(false);
    assert.ok(peak(perSecond, 5) > 250, `waves expected, largest second ${peak(perSecond, 5)}`);
  });
});

describe('the first renewal spread (renewal-loop.ts)', () => {
  const options = { renewAt: 0.5, maxLifetimeSeconds: 900, tokenTimeoutMs: 5000, maxRetryAfterSeconds: 600 };
  const armed = (spreadFirstRenewal: boolean | undefined, draws: number[]) => {
    const clock = new FakeClock();
    const l = new RenewalLoop({
      clock, logger: captureLogger().logger, random: () => draws.shift()!,
      options: { ...options, ...(spreadFirstRenewal === undefined ? {} : { spreadFirstRenewal }) },
    });
    const first = l.succeeded(clock.now(), 100_000, () => undefined);
    const second = l.succeeded(clock.now(), 100_000, () => undefined);
    return [first, second];
  };

  it('one set (the default) renews within the last 10 % of renewAt × lifetime, every time', () => {
    assert.deepEqual(armed(undefined, [0.8, 0.8]), [46, 46]);
    assert.deepEqual(armed(false, [0.8, 0.8]), [46, 46]);
  });

  it('spread: the first renewal anywhere in its delay, the later ones as documented', () => {
    assert.deepEqual(armed(true, [0.8, 0.8]), [10, 46]);
    assert.deepEqual(armed(true, [0, 0]), [50, 50]);
  });
});
