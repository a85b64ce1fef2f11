import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeadlineQueue, type DeadlineEntry } from '../../src/upstream/deadline-queue.js';
import { FakeClock } from '../helpers/fake-clock.js';

function entry(name: string, expired: string[]): DeadlineEntry {
  return { deadlineAt: 0, deadlinePrev: undefined, deadlineNext: undefined, deadlineQueue: undefined, expire: () => expired.push(name) };
}

describe('deadline queue', () => {
  it('expires each entry at its own deadline, in order, with one timer', () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(1000, clock);
    const expired: string[] = [];
    queue.add(entry('a', expired));
    clock.advance(300);
    queue.add(entry('b', expired));
    queue.add(entry('c', expired));
    assert.equal(clock.pending, 1, 'one timer for the whole queue');
    clock.advance(699);
    assert.deepEqual(expired, []);
    clock.advance(1);
    assert.deepEqual(expired, ['a']);
    clock.advance(300);
    assert.deepEqual(expired, ['a', 'b', 'c']);
    assert.equal(clock.pending, 0, 'no timer left once the queue is empty');
  });

  it('never expires a removed entry, and restarts the deadline of one added again', () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(1000, clock);
    const expired: string[] = [];
    const a = entry('a', expired);
    const b = entry('b', expired);
    const c = entry('c', expired);
    queue.add(a);
    queue.add(b);
    queue.add(c);
    queue.remove(b);
    queue.remove(b); // idempotent
    clock.advance(500);
    queue.add(a); // moved to the back, due at 1500
    clock.advance(500);
    assert.deepEqual(expired, ['c']);
    clock.advance(500);
    assert.deepEqual(expired, ['c', 'a']);
    clock.advance(5000);
    assert.deepEqual(expired, ['c', 'a']);
  });

  it('keeps expiring the others when one entry throws', () => {
    const clock = new FakeClock();
    const queue = new DeadlineQueue(100, clock);
    const expired: string[] = [];
    queue.add({ ...entry('bad', expired), expire: () => { throw new Error('boom'); } });
    clock.advance(50);
    queue.add(entry('good', expired));
    assert.throws(() => clock.advance(50), /boom/);
    clock.advance(50);
    assert.deepEqual(expired, ['good']);
  });
});
