import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SecretSet } from '../../src/shared/secrets.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { GentokenSlots } from '../../src/token/pacing/gentoken-slots.js';
import { createTokenClient, type Credentials } from '../../src/token/token-client.js';
import { TokenManager } from '../../src/token/token-manager.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLogger, ok, startGentokenServer, type Reply } from '../helpers/gentoken-server.js';
import { testTls } from '../helpers/tls.js';

const TOKEN_TIMEOUT_MS = 10_000;

/**
 * Many token managers (one per credential set) sharing one GentokenSlots, against a real HTTPS
 * gentoken server that holds every call until the test lets it answer; token timing on a fake clock.
 */
async function setup(sets: number, limit: number | undefined) {
  const server = await startGentokenServer();
  let open = 0;
  let most = 0;
  const held: Array<() => void> = [];
  server.respond = (_req, i) => {
    open++;
    most = Math.max(most, open);
    return new Promise<Reply>((resolve) => held.push(() => {
      open--;
      resolve(ok(`tok-${i + 1}-${'x'.repeat(12)}`, 900));
    }));
  };
  const client = createTokenClient({ baseUrl: server.url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 5000 });
  const clock = new FakeClock();
  const slots = limit === undefined ? undefined : new GentokenSlots(limit);
  const latencies: number[] = [];
  const managers = Array.from({ length: sets }, (_, n) => {
    const creds: Credentials = { apiKey: `apikey-set-${n}-0123456789`, password: `pw-set-${n}-secret`, version: 1 };
    return new TokenManager({
      client, credentials: { current: () => creds }, clock, logger: captureLogger().logger, secrets: new SecretSet(),
      random: () => 0.5,
      onRefresh: (_result, seconds) => latencies.push(seconds),
      ...(slots ? { slots } : {}),
      options: { renewAt: 0.66, maxLifetimeSeconds: 900, tokenTimeoutMs: TOKEN_TIMEOUT_MS },
    });
  });
  /** Lets the server answer the calls it holds, until `done()` or every call is answered. */
  const answerUntil = async (done: () => boolean) => {
    for (let spins = 0; !done(); spins++) {
      assert.ok(spins < 100_000, 'gave up waiting for the gentoken calls');
      await new Promise<void>((resolve) => setImmediate(resolve));
      held.splice(0).forEach((answer) => answer());
    }
  };
  return {
    server, clock, slots, managers, latencies, answerUntil,
    get most() { return most; },
    get open() { return open; },
    held,
    async close() {
      held.splice(0).forEach((answer) => answer());
      await Promise.all(managers.map((m) => m.stop()));
      await client.close();
      await server.close();
    },
  };
}

describe('token managers sharing gentoken slots', () => {
  it('50 sets started at once: the service sees at most 4 gentoken calls at a time, and every set gets its token', async () => {
    const t = await setup(50, 4);
    try {
      t.managers.forEach((m) => m.start());
      await t.server.received(4);
      await new Promise<void>((resolve) => setImmediate(resolve));
      assert.equal(t.open, 4, 'four calls on the wire');
      assert.equal(t.slots!.waiting, 46, 'the other 46 wait for a slot');
      await t.answerUntil(() => t.managers.every((m) => m.current() !== undefined));
      assert.equal(t.server.requests.length, 50, 'one call per set');
      assert.equal(t.most, 4);
      assert.equal(t.slots!.active, 0);
    } finally {
      await t.close();
    }
  });

  it('without shared slots every set calls at once (what the slots prevent)', async () => {
    const t = await setup(50, undefined);
    try {
      t.managers.forEach((m) => m.start());
      await t.server.received(50);
      assert.equal(t.open, 50);
      await t.answerUntil(() => t.managers.every((m) => m.current() !== undefined));
    } finally {
      await t.close();
    }
  });

  it('a set waiting for a slot is alive, shows an attempt under way, and its wait is not counted as gentoken latency', async () => {
    const t = await setup(3, 1);
    try {
      t.managers.forEach((m) => m.start());
      await t.server.received(1);
      const waiting = t.managers[2]!;
      // Far longer than the token timeout plus liveness's grace: the first call is held all along.
      t.clock.advance(TOKEN_TIMEOUT_MS + 120_000);
      assert.deepEqual(waiting.liveness(), { live: true });
      assert.equal(waiting.view().nextAttemptAt !== undefined, true, 'an attempt is under way');
      await t.answerUntil(() => t.managers.every((m) => m.current() !== undefined));
      // The fake clock stood still while the later calls were on the wire: 0 s each, not 130 s.
      assert.deepEqual([...t.latencies].sort((a, b) => a - b), [0, 0, 130]);
    } finally {
      await t.close();
    }
  });

  it('a request waiting for a token whose call waited for a slot gets the call\'s full deadline once it is sent', async () => {
    const t = await setup(2, 1);
    try {
      t.managers.forEach((m) => m.start());
      await t.server.received(1);
      const second = t.managers[1]!;
      const waiter = Promise.resolve(second.acquire());
      let settled: string | undefined;
      waiter.then((tok) => { settled = tok.value; }, (e: Error) => { settled = e.message; });
      t.clock.advance(TOKEN_TIMEOUT_MS / 2); // the first set's call is still held: the second waits for the slot
      t.held.shift()!();
      await t.server.received(2);
      assert.ok(t.managers[0]!.current());
      // The second call is on the wire now: 0.9 of the deadline later the waiter still waits (the
      // old deadline, counted from the request's arrival, would have ended at 0.5 of this).
      t.clock.advance(TOKEN_TIMEOUT_MS * 0.9);
      await new Promise<void>((resolve) => setImmediate(resolve));
      assert.equal(settled, undefined);
      await t.answerUntil(() => settled !== undefined);
      assert.match(settled!, /^tok-2-/);
    } finally {
      await t.close();
    }
  });

  it('a request gives up when its set waited for a slot longer than the token timeout', async () => {
    const t = await setup(2, 1);
    try {
      t.managers.forEach((m) => m.start());
      await t.server.received(1);
      const waiter = Promise.resolve(t.managers[1]!.acquire());
      t.clock.advance(TOKEN_TIMEOUT_MS);
      await assert.rejects(waiter, /timed out waiting for a token/);
    } finally {
      await t.close();
    }
  });

  it('stop() ends a wait for a slot', async () => {
    const t = await setup(2, 1);
    try {
      t.managers.forEach((m) => m.start());
      await t.server.received(1);
      assert.equal(t.slots!.waiting, 1);
      await t.managers[1]!.stop();
      assert.equal(t.slots!.waiting, 0);
      assert.deepEqual(t.managers[1]!.liveness(), { live: true });
    } finally {
      await t.close();
    }
  });
});
