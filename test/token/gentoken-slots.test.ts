import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_MAX_CONCURRENT_GENTOKEN, GentokenSlots, type ReleaseSlot } from '../../src/token/pacing/gentoken-slots.js';
import { TokenUnavailableError } from '../../src/shared/errors.js';
import { ConfigSchema } from '../../src/config/schema.js';

/** Lets queued promise callbacks run. */
async function ticks(n = 5): Promise<void> {
  for (let i = 0; i < n; i++) await Promise.resolve();
}

describe('GentokenSlots', () => {
  it('defaults to 8 and refuses a limit that is not a positive integer', () => {
    assert.equal(new GentokenSlots().limit, DEFAULT_MAX_CONCURRENT_GENTOKEN);
    assert.equal(DEFAULT_MAX_CONCURRENT_GENTOKEN, 8);
    // token.maxConcurrentGentoken's default is this one, justified where it is declared.
    assert.equal(ConfigSchema.properties.token.properties.maxConcurrentGentoken.default, DEFAULT_MAX_CONCURRENT_GENTOKEN);
    for (const bad of [0, -1, 1.5, Number.NaN]) assert.throws(() => new GentokenSlots(bad), RangeError);
  });

  it('takes a free slot synchronously when uncontended (the one-set fast path)', () => {
    const slots = new GentokenSlots(2);
    const a = slots.tryEnter();
    assert.equal(typeof a, 'function');
    assert.equal(slots.active, 1);
    a!();
    assert.equal(slots.active, 0);
    assert.equal(slots.waiting, 0);
  });

  it('never has more than the limit in at once', async () => {
    const slots = new GentokenSlots(3);
    let inside = 0;
    let most = 0;
    const gates: Array<() => void> = [];
    const runs = Array.from({ length: 20 }, () => slots.run(async () => {
      inside++;
      most = Math.max(most, inside);
      await new Promise<void>((resolve) => gates.push(resolve));
      inside--;
    }));
    await ticks();
    assert.equal(slots.active, 3);
    assert.equal(slots.waiting, 17);
    while (gates.length) {
      gates.shift()!();
      await ticks(10);
    }
    await Promise.all(runs);
    assert.equal(most, 3);
    assert.equal(slots.active, 0);
  });

  it('grants slots in arrival order (FIFO), and a newcomer cannot overtake waiters', async () => {
    const slots = new GentokenSlots(1);
    const first = slots.tryEnter()!;
    const order: number[] = [];
    const waits = [1, 2, 3].map((n) => slots.enter().then((release) => {
      order.push(n);
      return release;
    }));
    // A free slot appears only as a handover: tryEnter refuses while others wait.
    assert.equal(slots.tryEnter(), undefined);
    first();
    let release = await waits[0]!;
    assert.equal(slots.tryEnter(), undefined, 'the freed slot went to the first waiter, not to a newcomer');
    release();
    release = await waits[1]!;
    release();
    release = await waits[2]!;
    release();
    assert.deepEqual(order, [1, 2, 3]);
    assert.equal(slots.active, 0);
  });

  it('releases the slot when the call fails', async () => {
    const slots = new GentokenSlots(1);
    await assert.rejects(slots.run(() => Promise.reject(new Error('gentoken failed'))), /gentoken failed/);
    assert.equal(slots.active, 0);
    assert.equal(await slots.run(async () => 'next'), 'next');
  });

  it('a second release does not free a second slot', async () => {
    const slots = new GentokenSlots(1);
    const a = slots.tryEnter()!;
    const waiting = slots.enter();
    a();
    a();
    const b: ReleaseSlot = await waiting;
    assert.equal(slots.active, 1);
    assert.equal(slots.tryEnter(), undefined);
    b();
    assert.equal(slots.active, 0);
  });

  it('a waiter whose signal aborts leaves the queue and its turn passes to the next', async () => {
    const slots = new GentokenSlots(1);
    const first = slots.tryEnter()!;
    const stop = new AbortController();
    const gone = slots.enter(stop.signal);
    const next = slots.enter();
    stop.abort(new TokenUnavailableError('the token manager was stopped'));
    await assert.rejects(gone, /the token manager was stopped/);
    assert.equal(slots.waiting, 1);
    first();
    const release = await next;
    release();
    assert.equal(slots.active, 0);
    const held = slots.tryEnter()!;
    await assert.rejects(slots.enter(stop.signal), TokenUnavailableError, 'an aborted signal does not queue');
    assert.equal(slots.waiting, 0);
    held();
  });

  it('stays FIFO and bounded across thousands of waiters (the queue is compacted, not shifted)', async () => {
    const slots = new GentokenSlots(8);
    const order: number[] = [];
    const all = Array.from({ length: 5000 }, (_, i) => slots.run(async () => {
      order.push(i);
      assert.ok(slots.active <= 8);
    }));
    await Promise.all(all);
    assert.deepEqual(order, [...order].sort((a, b) => a - b));
    assert.equal(slots.active, 0);
    assert.equal(slots.waiting, 0);
  });
});
