import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UploadShare } from '../../src/proxy/upload-share.js';

describe('the per-source share of streamed uploads', () => {
  it('starts a source\'s streams up to its share, then one per stream that ends, in arrival order; other sources are not affected', () => {
    const share = new UploadShare(2);
    const started: string[] = [];
    const slots = ['a1', 'a2', 'a3', 'a4'].map((name) => share.take('service 10.0.0.1', () => started.push(name)));
    const other = share.take('service 10.0.0.2', () => started.push('b1'));
    assert.deepEqual(started, ['a1', 'a2', 'b1']);
    assert.deepEqual(share.count('service 10.0.0.1'), { active: 2, waiting: 2 });
    slots[1]!.end();
    slots[1]!.end(); // idempotent: frees one slot only
    assert.deepEqual(started, ['a1', 'a2', 'b1', 'a3']);
    // A waiting stream whose client went away leaves the queue without starting.
    slots[3]!.end();
    slots[0]!.end();
    assert.deepEqual(started, ['a1', 'a2', 'b1', 'a3']);
    assert.deepEqual(share.count('service 10.0.0.1'), { active: 1, waiting: 0 });
    slots[2]!.end();
    other.end();
    assert.deepEqual(share.count('service 10.0.0.1'), { active: 0, waiting: 0 });
  });

  it('allows at least one stream per source', () => {
    const share = new UploadShare(0);
    let started = 0;
    share.take('k', () => started++);
    assert.equal(started, 1);
    assert.equal(share.perSource, 1);
  });
});
