import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { BufferedBody } from '../../src/proxy/body/buffered-body.js';
import { ReplayBudget } from '../../src/proxy/body/replay-body.js';

/** A real request with `payload` as its body, received by a real server on loopback; resolves with the server's IncomingMessage. */
async function received(t: { after: (fn: () => Promise<void>) => void }, payload: Buffer): Promise<IncomingMessage> {
  let answer: (req: IncomingMessage) => void;
  const arrived = new Promise<IncomingMessage>((resolve) => { answer = resolve; });
  const server = createServer((req, res) => {
    answer(req);
    req.once('end', () => res.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  }));
  const client = request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', method: 'POST', path: '/', headers: { 'content-length': payload.length } }, (res) => res.resume());
  client.end(payload);
  return arrived;
}

describe('a body received whole (BufferedBody)', () => {
  it('holds its copy for a replay until settle, then neither the copy nor its budget booking', async (t) => {
    const payload = Buffer.alloc(200_000, 'b');
    const req = await received(t, payload);
    const budget = new ReplayBudget(1 << 20);
    const hold = budget.open('127.0.0.1');
    assert.equal(hold.take(payload.length), undefined);
    const body = new BufferedBody(req, hold, undefined);
    const sent = await new Promise<Buffer>((resolve) => body.ready(resolve));
    assert.ok(sent.equals(payload));
    // Before the answer: a retry or replay gets the whole body again.
    assert.ok((await body.again())?.equals(payload), 'the copy for a replay');
    assert.equal(budget.held, payload.length);
    body.settle();
    assert.equal(budget.held, 0);
    // Settled: the copy is let go (a slow client reading the answer holds nothing outside the budget).
    // (assert.ok, not assert.equal: a failure's diff of 200 kB would take minutes to print)
    assert.ok((await body.again()) === undefined, 'a settled body still holds its copy');
    body.settle();
    body.abandon();
    assert.equal(budget.held, 0, 'settle and abandon give back once');
    assert.equal(budget.sources, 0);
  });
});
