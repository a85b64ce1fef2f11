import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BlockPool } from '../../src/shared/block-pool.js';
import { FakeClock } from '../helpers/fake-clock.js';

describe('BlockPool', () => {
  it('hands a released block out again instead of allocating', () => {
    const pool = new BlockPool(1024, new FakeClock(), 10_000);
    const a = pool.acquire();
    assert.equal(a.length, 1024);
    pool.release(a);
    assert.equal(pool.acquire(), a);
    assert.equal(pool.allocated, 1);
  });

  it('allocates blocks of its own, not slices of Node\'s shared pool', () => {
    const pool = new BlockPool(1024, new FakeClock(), 10_000);
    const block = pool.acquire();
    assert.equal(block.byteOffset, 0);
    assert.equal(block.buffer.byteLength, 1024);
  });

  it('drops blocks that stayed unused for a whole interval, and keeps those in use', () => {
    const clock = new FakeClock();
    const pool = new BlockPool(1024, clock, 10_000);
    const blocks = Array.from({ length: 8 }, () => pool.acquire());
    for (const b of blocks) pool.release(b);
    assert.equal(clock.pending, 1, 'one trim timer while blocks are free');
    clock.advance(10_000);
    assert.equal(pool.free, 8, 'freed during this interval: not yet unused for a whole one');
    // Two blocks are needed at once during the next interval: six were never touched.
    const busy = [pool.acquire(), pool.acquire()];
    for (const b of busy) pool.release(b);
    clock.advance(10_000);
    assert.equal(pool.free, 2);
    assert.equal(pool.allocated, 2);
    clock.advance(10_000);
    assert.equal(pool.free, 0);
    assert.equal(pool.allocated, 0);
    assert.equal(clock.pending, 0, 'no timer once nothing is free');
  });

  it('counts blocks in use as allocated and never drops them', () => {
    const clock = new FakeClock();
    const pool = new BlockPool(1024, clock, 10_000);
    const held = pool.acquire();
    pool.release(pool.acquire());
    clock.advance(60_000);
    assert.equal(pool.allocated, 1);
    assert.equal(pool.free, 0);
    pool.release(held);
    assert.equal(pool.allocated, 1);
  });

  it('clear() drops the free blocks and its timer', () => {
    const clock = new FakeClock();
    const pool = new BlockPool(1024, clock, 10_000);
    pool.release(pool.acquire());
    pool.clear();
    assert.equal(pool.allocated, 0);
    assert.equal(clock.pending, 0);
  });
});
