import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UploadShare } from '../../src/proxy/body/upload-share.js';

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

  it('streams of all sources together stop at the total: several addresses cannot take the pool, and freed slots go to waiting sources in turn', () => {
    // Four addresses of one process, three streams each allowed, six for everyone on the route.
    const share = new UploadShare(3, 6);
    const started: string[] = [];
    const slots = new Map<string, ReturnType<UploadShare['take']>>();
    for (const source of ['a', 'b', 'c', 'd']) {
      for (let i = 1; i <= 3; i++) slots.set(`${source}${i}`, share.take(`service ${source}`, () => started.push(`${source}${i}`), 'service'));
    }
    assert.deepEqual(started, ['a1', 'a2', 'a3', 'b1', 'b2', 'b3']);
    assert.deepEqual(share.totals(), { active: 6, waiting: 6 });
    // Another route has its own pool.
    const other = share.take('localization a', () => started.push('loc'), 'localization');
    assert.equal(started.at(-1), 'loc');
    other.end();
    // a's streams end: the freed slots go to c, then d, then c (round robin), not all to c.
    slots.get('a1')!.end();
    slots.get('a2')!.end();
    slots.get('a3')!.end();
    assert.deepEqual(started.slice(-3), ['c1', 'd1', 'c2']);
    assert.deepEqual(share.totals(), { active: 6, waiting: 3 });
    for (const slot of slots.values()) slot.end();
    assert.deepEqual(share.totals(), { active: 0, waiting: 0 });
  });
});
