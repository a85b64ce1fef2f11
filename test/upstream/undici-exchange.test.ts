import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { DeadlineQueue } from '../../src/upstream/deadline-queue.js';
import { ClientGone, type UpstreamResponse } from '../../src/upstream/engine.js';
import { UndiciExchange, type ExchangeDeadlines } from '../../src/upstream/undici-exchange.js';
import { answerForUpstreamError } from '../../src/upstream/upstream-error.js';
import { FakeClock } from '../helpers/fake-clock.js';

/** A client response whose socket buffer is full: every write is refused until 'drain'. */
class FullResponse extends EventEmitter {
  written: Buffer[] = [];
  ended = false;
  accept = false;
  write(chunk: Buffer): boolean {
    this.written.push(chunk);
    return this.accept;
  }
  end(chunk?: Buffer): void {
    if (chunk) this.written.push(chunk);
    this.ended = true;
  }
  destroyed = false;
  destroy(): void {
    this.destroyed = true;
  }
}

/** An exchange driven by hand through undici's handler calls, as undici's client makes them. */
function started() {
  let response!: UpstreamResponse;
  const exchange = new UndiciExchange(new ClientGone(), (r) => { response = r; }, (err) => { throw err; });
  let resumes = 0;
  exchange.onConnect(() => undefined);
  exchange.onHeaders(200, [Buffer.from('content-type'), Buffer.from('text/plain')], () => { resumes++; });
  return { exchange, response: () => response, resumes: () => resumes };
}

describe('undici exchange (dispatch handler that is also the response body)', () => {
  it('waits for one drain, however many queued chunks a full client response refused', async () => {
    const { exchange, response, resumes } = started();
    await Promise.resolve();
    // Small chunks queue up until the consumer attaches; past 64 KiB the upstream is paused.
    let accepted = true;
    for (let i = 0; accepted; i++) accepted = exchange.onData(Buffer.alloc(256, 97));
    const res = new FullResponse();
    response().body.pipeTo(res as unknown as ServerResponse);
    assert.ok(res.written.length > 200, 'the queued chunks were flushed');
    assert.equal(res.listenerCount('drain'), 1);
    assert.equal(resumes(), 0, 'nothing resumed while the client buffer is full');
    res.accept = true;
    res.emit('drain');
    assert.equal(resumes(), 1, 'one drain resumes the upstream once');
    assert.equal(res.listenerCount('drain'), 0);
    exchange.onComplete();
    assert.ok(res.ended);
  });

  it('ignores interim 1xx answers and settles on the final one', async () => {
    let status = 0;
    const exchange = new UndiciExchange(new ClientGone(), (r) => { status = r.status; }, (err) => { throw err; });
    exchange.onConnect(() => undefined);
    assert.equal(exchange.onHeaders(103, [Buffer.from('link'), Buffer.from('</a.css>; rel=preload')], () => undefined), true);
    await Promise.resolve();
    assert.equal(status, 0);
    exchange.onHeaders(200, [], () => undefined);
    await Promise.resolve();
    assert.equal(status, 200);
  });

  it('sends a small answer that arrived whole with a single end(chunk)', async () => {
    const { exchange, response } = started();
    exchange.onData(Buffer.from('hello'));
    exchange.onComplete();
    await Promise.resolve();
    const res = new FullResponse();
    response().body.pipeTo(res as unknown as ServerResponse);
    assert.deepEqual(res.written.map(String), ['hello']);
    assert.ok(res.ended);
    assert.equal(res.listenerCount('drain'), 0);
  });
});

/** Header deadline 500 ms, pause deadline 1000 ms, on a fake clock. */
function withDeadlines() {
  const clock = new FakeClock();
  const deadlines: ExchangeDeadlines = { headers: new DeadlineQueue(500, clock), paused: new DeadlineQueue(1000, clock) };
  let response: UpstreamResponse | undefined;
  const errors: Error[] = [];
  const aborts: Error[] = [];
  const exchange = new UndiciExchange(new ClientGone(), (r) => { response = r; }, (err) => { errors.push(err); }, deadlines);
  // As undici does: aborting fails the request through the handler's onError; an error thrown by
  // onConnect fails it too, without the connection (`thrown`).
  const thrown: unknown[] = [];
  const connect = () => {
    try {
      exchange.onConnect((reason) => { aborts.push(reason); exchange.onError(reason); });
    } catch (err) {
      thrown.push(err);
    }
  };
  return { clock, exchange, connect, response: () => response, errors, aborts, thrown };
}

const codeOf = (err: Error | undefined) => (err as { code?: string } | undefined)?.code;

describe('undici exchange deadlines', () => {
  it('fails with a 504 timeout when a request is still queued at its header deadline, and is aborted once connected', () => {
    const { clock, connect, errors, aborts, thrown } = withDeadlines();
    clock.advance(499);
    assert.equal(errors.length, 0);
    clock.advance(1);
    assert.equal(codeOf(errors[0]), 'SIDECAR_ERR_UPSTREAM_TIMEOUT');
    assert.equal(answerForUpstreamError(errors[0]).status, 504);
    // undici hands it a connection later: refused by throwing (undici then fails the request
    // without destroying that connection), never written.
    connect();
    assert.equal(thrown[0], errors[0]);
    assert.equal(aborts.length, 0, 'abort() would destroy a healthy upstream connection');
    assert.equal(errors.length, 1, 'the caller is answered once');
  });

  it('aborts a connected request whose final headers are late, interim answers notwithstanding', () => {
    const { clock, exchange, connect, errors, aborts } = withDeadlines();
    connect();
    clock.advance(300);
    exchange.onHeaders(103, [], () => undefined);
    clock.advance(200);
    assert.equal(codeOf(aborts[0]), 'SIDECAR_ERR_UPSTREAM_TIMEOUT');
    assert.deepEqual(errors, [aborts[0]]);
  });

  it('keeps no deadline once the final headers are in', () => {
    const { clock, exchange, connect, response, errors, aborts } = withDeadlines();
    connect();
    exchange.onHeaders(200, [], () => undefined);
    clock.advance(10_000);
    assert.equal(response()?.status, 200);
    assert.equal(errors.length + aborts.length, 0);
    assert.equal(clock.pending, 0);
  });

  it('cuts the answer of a client that stopped reading once the pause deadline passes', () => {
    const { clock, exchange, connect, response, aborts } = withDeadlines();
    connect();
    exchange.onHeaders(200, [], () => undefined);
    const res = new FullResponse();
    response()!.body.pipeTo(res as unknown as ServerResponse);
    assert.equal(exchange.onData(Buffer.from('x')), false, 'the client buffer is full: upstream paused');
    clock.advance(999);
    assert.equal(aborts.length, 0);
    clock.advance(1);
    assert.equal(codeOf(aborts[0]), 'SIDECAR_ERR_CLIENT_STALLED');
    assert.ok(res.destroyed, 'the client response is given up too');
  });

  it('does not cut a client that keeps reading, however long the whole answer takes', () => {
    const { clock, exchange, connect, response, aborts } = withDeadlines();
    connect();
    let resumes = 0;
    exchange.onHeaders(200, [], () => { resumes++; });
    const res = new FullResponse();
    response()!.body.pipeTo(res as unknown as ServerResponse);
    for (let i = 0; i < 5; i++) {
      assert.equal(exchange.onData(Buffer.from('x')), false);
      clock.advance(900);
      res.emit('drain');
    }
    assert.equal(resumes, 5);
    exchange.onComplete();
    clock.advance(10_000);
    assert.equal(aborts.length, 0);
    assert.ok(!res.destroyed);
  });

  it('cuts an answer nobody started reading once the pause deadline passes', () => {
    const { clock, exchange, connect, aborts } = withDeadlines();
    connect();
    exchange.onHeaders(200, [], () => undefined);
    let accepted = true;
    while (accepted) accepted = exchange.onData(Buffer.alloc(16 * 1024));
    clock.advance(1000);
    assert.equal(codeOf(aborts[0]), 'SIDECAR_ERR_CLIENT_STALLED');
  });
});

describe('undici engine', () => {
  it('does not dispatch for a client that is already gone (e.g. during a token renewal)', async () => {
    const { createServer } = await import('node:http');
    const { createUndiciEngine } = await import('../../src/upstream/undici-engine.js');
    let requests = 0;
    const up = createServer((_req, res) => { requests++; res.end('x'); });
    await new Promise<void>((r) => up.listen(0, '127.0.0.1', r));
    const port = (up.address() as { port: number }).port;
    const engine = createUndiciEngine({ baseUrl: new URL(`http://127.0.0.1:${port}`), ca: undefined, maxSockets: 1, keepAliveTimeoutMs: 1000, headersTimeoutMs: 1000, bodyTimeoutMs: 1000 });
    try {
      const gone = new ClientGone();
      gone.abort();
      await assert.rejects(engine.send({ method: 'GET', path: '/', headers: {}, body: undefined, signal: gone }), { code: 'UND_ERR_ABORTED' });
      const live = await engine.send({ method: 'GET', path: '/', headers: {}, body: undefined, signal: new ClientGone() });
      assert.equal((await live.body.readAll(10))?.toString(), 'x');
      assert.equal(requests, 1, 'only the live request reached the upstream');
    } finally {
      await engine.close();
      await new Promise((r) => up.close(r));
    }
  });
});
