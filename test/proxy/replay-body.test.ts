import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { ReplayBudget, ReplayTee } from '../../src/proxy/body/replay-body.js';
import type { CaptureDropReason } from '../../src/observability/metrics.js';

/** A client request: the tee only reads it as a stream. */
const request = () => new PassThrough() as PassThrough & IncomingMessage;

/** Feeds `body` to the request in chunks of the given sizes (repeated) and reads what the tee passes on. */
async function upload(tee: ReplayTee, req: PassThrough, body: Buffer, sizes: number[]): Promise<Buffer> {
  const passed: Buffer[] = [];
  tee.on('data', (chunk: Buffer) => passed.push(Buffer.from(chunk)));
  const ended = new Promise((resolve) => tee.once('end', resolve));
  for (let at = 0, i = 0; at < body.length; i++) {
    const size = sizes[i % sizes.length]!;
    req.write(body.subarray(at, at + size));
    at += size;
    await new Promise(setImmediate);
  }
  req.end();
  await ended;
  return Buffer.concat(passed);
}

describe('ReplayTee', () => {
  it('replays the exact bytes of bodies sent in uneven chunks', async () => {
    const budget = new ReplayBudget(1 << 20);
    for (const [length, sizes] of [[1, [1]], [16384, [16384]], [16385, [7000, 9385]], [64 * 1024 + 13, [65536, 1, 12]], [100_000, [1000, 16383, 3]]] as const) {
      const body = randomBytes(length);
      const req = request();
      const tee = new ReplayTee(req, 1 << 20, budget.open('127.0.0.1'), assert.fail);
      const passed = await upload(tee, req, body, [...sizes]);
      assert.ok(passed.equals(body), 'the consumer got the body as sent');
      const copy = await tee.captured();
      assert.ok(copy && copy.equals(body), `${length} bytes in chunks of ${sizes.join('/')}: the replay copy differs`);
      assert.ok((await tee.captured())!.equals(body), 'asked twice (a replay, then a retry): the same bytes');
      assert.equal(budget.held, length, 'held until released');
      tee.release();
      assert.equal(budget.held, 0);
    }
  });

  it('keeps concurrent uploads apart', async () => {
    const budget = new ReplayBudget(1 << 22);
    const bodies = Array.from({ length: 8 }, (_, i) => randomBytes(20_000 + i * 5_003));
    const tees = bodies.map(() => {
      const req = request();
      return { req, tee: new ReplayTee(req, 1 << 20, budget.open('127.0.0.1'), assert.fail) };
    });
    await Promise.all(tees.map(({ req, tee }, i) => upload(tee, req, bodies[i]!, [4096 + i * 1000])));
    for (const [i, { tee }] of tees.entries()) assert.ok((await tee.captured())!.equals(bodies[i]!), `upload ${i}`);
    assert.equal(budget.held, bodies.reduce((n, b) => n + b.length, 0));
    for (const { tee } of tees) tee.release();
    assert.equal(budget.held, 0);
  });

  it('gives its copy back when it outgrows the limit, and passes the body on all the same', async () => {
    const budget = new ReplayBudget(1 << 20);
    const drops: CaptureDropReason[] = [];
    const req = request();
    const tee = new ReplayTee(req, 40_000, budget.open('127.0.0.1'), (reason) => drops.push(reason));
    const body = randomBytes(50_000);
    assert.ok((await upload(tee, req, body, [10_000])).equals(body));
    assert.deepEqual(drops, ['request_limit']);
    assert.equal(await tee.captured(), undefined);
    assert.equal(budget.held, 0);
  });

  it('gives its copy back when the client goes away mid-upload', async () => {
    const budget = new ReplayBudget(1 << 20);
    const req = request();
    const tee = new ReplayTee(req, 1 << 20, budget.open('127.0.0.1'), assert.fail);
    tee.resume();
    req.write(randomBytes(30_000));
    await new Promise(setImmediate);
    assert.equal(budget.held, 30_000);
    req.destroy();
    await new Promise(setImmediate);
    assert.equal(await tee.captured(), undefined);
    assert.equal(budget.held, 0);
    assert.equal(budget.sources, 0, 'no record of the source is left behind');
  });

  it('drops its copy at its source\'s share of the budget (source_limit) while another source still copies', async () => {
    // A share of 64,000 of 128,000: past its share, a source may not take the room the others keep.
    const budget = new ReplayBudget(128_000, 64_000);
    const drops: CaptureDropReason[] = [];
    const first = request();
    const held = new ReplayTee(first, 1 << 20, budget.open('10.0.0.1'), assert.fail);
    held.resume();
    first.write(randomBytes(50_000));
    await new Promise(setImmediate);
    // The same source's second upload outgrows the share: passed on, not copied.
    const req = request();
    const tee = new ReplayTee(req, 1 << 20, budget.open('10.0.0.1'), (reason) => drops.push(reason));
    const body = randomBytes(30_000);
    assert.ok((await upload(tee, req, body, [10_000])).equals(body));
    assert.deepEqual(drops, ['source_limit']);
    assert.equal(await tee.captured(), undefined);
    assert.equal(budget.heldBy('10.0.0.1'), 50_000, 'only the first upload\'s bytes stay booked');
    // Another source is not held back by the first one's uploads.
    const otherReq = request();
    const other = new ReplayTee(otherReq, 1 << 20, budget.open('10.0.0.2'), assert.fail);
    assert.ok((await upload(other, otherReq, body, [7_000])).equals(body));
    assert.ok((await other.captured())!.equals(body));
    assert.equal(budget.held, 80_000);
    other.release();
    first.destroy();
    await new Promise(setImmediate);
    assert.equal(budget.held, 0);
    assert.equal(budget.sources, 0);
  });
});

describe('ReplayBudget', () => {
  it('lets one source past its share while a share stays free for the others (a sidecar with one local client keeps most of the budget)', () => {
    const budget = new ReplayBudget(100, 25);
    const a = budget.open('127.0.0.1');
    assert.equal(a.take(30), undefined, 'past its share of 25: the others still have 70');
    assert.equal(a.take(45), undefined, '75 held: exactly one share left');
    assert.equal(a.take(1), 'source_limit', 'the last share is the others\'');
    const b = budget.open('127.0.0.2');
    assert.equal(b.take(25), undefined);
    assert.equal(b.take(1), 'global_limit');
    a.close();
    b.close();
    assert.equal(budget.held, 0);
    assert.equal(budget.sources, 0);
  });

  it('books per source and in total, and gives back exactly what each hold booked, once', () => {
    const budget = new ReplayBudget(100, 60);
    const a1 = budget.open('a');
    const a2 = budget.open('a');
    const b = budget.open('b');
    assert.equal(a1.take(40), undefined);
    assert.equal(a2.take(30), 'source_limit', 'a would hold 70 of its 60');
    assert.equal(a2.take(20), undefined);
    assert.equal(b.take(50), 'global_limit', '110 of 100 in all');
    assert.equal(b.take(40), undefined);
    assert.equal(a2.take(1), 'global_limit', 'both full: the whole budget is named');
    assert.deepEqual([budget.held, budget.heldBy('a'), budget.heldBy('b')], [100, 60, 40]);
    a1.close();
    a1.close();
    assert.deepEqual([budget.held, budget.heldBy('a'), budget.sources], [60, 20, 2], 'a second close gives back nothing more');
    a2.close();
    assert.deepEqual([budget.held, budget.heldBy('a'), budget.sources], [40, 0, 1], 'a is forgotten with its last hold');
    b.close();
    assert.deepEqual([budget.held, budget.sources], [0, 0]);
  });

  it('without a share, one source may book the whole capacity; a share is never above it', () => {
    const whole = new ReplayBudget(100);
    const hold = whole.open('a');
    assert.equal(hold.take(100), undefined);
    hold.close();
    assert.equal(new ReplayBudget(100, 500).perSource, 100);
  });

  it('keeps a reserve for small bodies received whole that no source\'s bookings reach, one room per connection', () => {
    // 100 bytes, 20 of them kept as rooms of 5; sources share the other 80 (25 each past which they may not take the last share).
    const budget = new ReplayBudget(100, 25, { bytes: 20, perConnection: 5 });
    assert.deepEqual([budget.general, budget.perSource], [80, 25]);
    const hog = budget.open('127.0.0.1');
    assert.equal(hog.take(55), undefined);
    assert.equal(hog.take(1), 'source_limit', 'the last share of the general part is the other sources\'');
    const other = budget.open('127.0.0.2');
    assert.equal(other.take(25), undefined);
    const third = budget.open('127.0.0.3');
    assert.equal(third.take(1), 'global_limit', 'the general part is full');
    third.close();
    // Another app behind 127.0.0.1: its small body finds its room, up to four more besides.
    const small = Array.from({ length: 4 }, () => budget.open('127.0.0.1'));
    for (const hold of small) assert.equal(hold.takeWhole(5), undefined);
    assert.deepEqual([budget.held, budget.reservedHeld], [100, 20]);
    const late = budget.open('127.0.0.9');
    assert.equal(late.takeWhole(1), 'global_limit', 'every room taken');
    late.close();
    // A body larger than a room, or a streamed copy (take), never reaches the reserve.
    small[0]!.close();
    const large = budget.open('127.0.0.4');
    assert.equal(large.takeWhole(6), 'global_limit');
    large.close();
    const streamed = budget.open('127.0.0.5');
    assert.equal(streamed.take(1), 'global_limit');
    streamed.close();
    // Everything goes back where it was booked.
    for (const hold of [hog, other, ...small]) hold.close();
    assert.deepEqual([budget.held, budget.reservedHeld, budget.sources], [0, 0, 0]);
  });
});
