import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { createListener } from '../../src/proxy/listener/listener.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';

const LIMITS = { requestTimeoutMs: 10_000, headersTimeoutMs: 5_000, maxHeaderBytes: 16 * 1024, maxConnections: 16 };

describe('listener', () => {
  it('closes every pipelined response when the client disconnects, and never hands the queued ones to the handler', async () => {
    const held: ServerResponse[] = [];
    const closed: string[] = [];
    const listener = createListener((req, res) => {
      held.push(res); // never answered
      res.once('close', () => closed.push(req.url ?? ''));
    }, LIMITS, createCaptureLogger().logger);
    const port = await listener.listen('127.0.0.1', 0);
    try {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\nGET /third HTTP/1.1\r\nHost: x\r\n\r\n');
      while (listener.inflight < 3) await new Promise((r) => setTimeout(r, 5));
      assert.equal(held.length, 1, 'a pipelined request waits until the one before it is answered');
      socket.destroy();
      const deadline = Date.now() + 2000;
      while (listener.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      assert.deepEqual(closed, ['/first']);
      assert.equal(listener.inflight, 0);
      assert.equal(held.length, 1, 'a queued request whose client is gone never reaches the handler');
      assert.ok(held.every((res) => res.destroyed), 'a response is unusable once its client is gone');
      const started = Date.now();
      await listener.close(3000);
      assert.ok(Date.now() - started < 1000, `close() waited ${Date.now() - started} ms for requests whose client was gone`);
    } finally {
      await listener.close();
    }
  });

  it('closes a pipelined response once only, when its client disconnects after it was answered', async () => {
    let closes = 0;
    const listener = createListener((req, res) => {
      res.on('close', () => closes++); // `on`, not `once`: a second close must be counted
      if (req.url === '/answered') res.end('ok');
    }, LIMITS, createCaptureLogger().logger);
    const port = await listener.listen('127.0.0.1', 0);
    try {
      const socket = connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      const answered = new Promise((r) => socket.once('data', r));
      socket.write('GET /answered HTTP/1.1\r\nHost: x\r\n\r\nGET /held HTTP/1.1\r\nHost: x\r\n\r\n');
      await answered;
      socket.destroy();
      const deadline = Date.now() + 2000;
      while (listener.inflight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(closes, 2);
      assert.equal(listener.inflight, 0);
    } finally {
      await listener.close();
    }
  });
});
