/**
 * The keep-alive race on the gentoken call (docs/traps.md T53): the service, a load balancer or a
 * forward proxy closes an idle keep-alive connection just as the token client reuses it. A real
 * HTTPS server on port 0 (the test CA through `caFile`, as in production) closes the connection
 * when a chosen request's head arrives, before any answer byte, which is exactly what the client
 * sees in the race, without depending on timing.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { describe, it } from 'node:test';
import { TokenRequestError } from '../../src/shared/errors.js';
import { parseProxyUrl } from '../../src/shared/egress-proxy.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { createTokenClient, type Credentials, type TokenClientOptions } from '../../src/token/token-client.js';
import { createEgress } from '../../src/upstream/egress.js';
import { startTinyproxy } from '../helpers/forward-proxies.js';
import { testTls } from '../helpers/tls.js';

const creds: Credentials = { apiKey: 'key-STALE123456', password: 'pw-stale-s3cret', version: 1 };

/** What the server does with a request: answer it with a status, or close its connection unanswered. */
type Action = number | 'close';

interface Seen {
  /** Which connection (1, 2, ...) carried the request, and how many it had carried before. */
  connection: number;
  before: number;
  body: string;
}

/**
 * A gentoken server deciding per request from `(index, requestsBeforeOnThisConnection)`. `close`
 * destroys the connection as soon as the request head arrives. Answers carry a token `tok-<index+1>`.
 */
async function startServer(decide: (index: number, before: number) => Action) {
  const tls = await testTls();
  const seen: Seen[] = [];
  const perSocket = new WeakMap<Socket, { id: number; count: number }>();
  let connections = 0;
  const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const socket = req.socket;
    let info = perSocket.get(socket);
    if (!info) perSocket.set(socket, (info = { id: ++connections, count: 0 }));
    const before = info.count++;
    const index = seen.length;
    const chunks: Buffer[] = [];
    const entry: Seen = { connection: info.id, before, body: '' };
    seen.push(entry);
    const action = decide(index, before);
    if (action === 'close') {
      socket.destroy();
      return;
    }
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      entry.body = Buffer.concat(chunks).toString();
      const body = action === 200 ? JSON.stringify({ token: `tok-${index + 1}`, refreshToken: null, aliveSecondsTtl: 2 }) : '{"message":"no"}';
      res.writeHead(action, { 'content-type': 'application/json', ...(action === 307 ? { location: 'https://elsewhere.example/gentoken' } : {}) });
      res.end(body);
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}`,
    port,
    seen,
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function clientFor(url: string, extra: Partial<TokenClientOptions> = {}) {
  return createTokenClient({ baseUrl: url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 10_000, ...extra });
}

/**
 * undici hands a connection back to its pool one event-loop turn after the answer; a call made in
 * the same turn opens another connection. Renewals are never back to back, so wait for that turn.
 */
function poolTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function settle<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  return p.then((value) => ({ value }), (error: unknown) => ({ error }));
}

describe('gentoken on a keep-alive connection closed under it', () => {
  it('sends the call once more, on a new connection, when the reused connection closes before any answer', async () => {
    // 1st call answered; the 2nd arrives on the same (reused) connection, which is closed unanswered.
    const server = await startServer((_i, before) => (before > 0 ? 'close' : 200));
    const client = await clientFor(server.url);
    try {
      assert.equal((await client.requestToken(creds)).token, 'tok-1');
      await poolTurn();
      const second = await client.requestToken(creds);
      assert.equal(second.token, 'tok-3');
      assert.deepEqual(server.seen.map((s) => [s.connection, s.before]), [[1, 0], [1, 1], [2, 0]], 'the retry goes on a new connection');
      assert.deepEqual(JSON.parse(server.seen[2]!.body), { password: creds.password });
      // The client keeps working afterwards (the retry's connection is not left half-used).
      await poolTurn();
      assert.equal((await client.requestToken(creds)).token, 'tok-4');
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('reports a close on a new connection as a failure and does not send the call again', async () => {
    const server = await startServer(() => 'close');
    const client = await clientFor(server.url);
    try {
      const { error } = await settle(client.requestToken(creds));
      assert.ok(error instanceof TokenRequestError, String(error));
      assert.match(error.message, /^auth server unreachable/);
      assert.equal(server.seen.length, 1, 'a failure on a fresh connection is not the race');
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('gives up after the one retry when the new connection is closed too', async () => {
    const server = await startServer((i) => (i === 0 ? 200 : 'close'));
    const client = await clientFor(server.url);
    try {
      assert.equal((await client.requestToken(creds)).token, 'tok-1');
      await poolTurn();
      const { error } = await settle(client.requestToken(creds));
      assert.ok(error instanceof TokenRequestError, String(error));
      assert.match(error.message, /^auth server unreachable/);
      assert.deepEqual(server.seen.map((s) => [s.connection, s.before]), [[1, 0], [1, 1], [2, 0]], 'exactly one retry');
    } finally {
      await client.close();
      await server.close();
    }
  });

  for (const [status, kind] of [[503, 'server_error'], [307, 'http']] as const) {
    it(`never sends the call again after an HTTP ${status} answer on a reused connection`, async () => {
      const server = await startServer((i) => (i === 0 ? 200 : status));
      const client = await clientFor(server.url);
      try {
        await client.requestToken(creds);
        await poolTurn();
        const { error } = await settle(client.requestToken(creds));
        assert.ok(error instanceof TokenRequestError, String(error));
        assert.equal(error.kind, kind);
        assert.equal(error.upstreamStatus, status);
        assert.equal(server.seen.length, 2);
      } finally {
        await client.close();
        await server.close();
      }
    });
  }

  it('sends the call once more through a new tunnel when a real forward proxy (tinyproxy) closes the reused one', async () => {
    const server = await startServer((_i, before) => (before > 0 ? 'close' : 200));
    const proxy = await startTinyproxy();
    const ca = loadTrustedCas((await testTls()).caFile);
    const egress = createEgress({ route: 'service', ca, proxy: parseProxyUrl(proxy.url, 'service.proxy') });
    const client = await clientFor(server.url, { egress });
    try {
      assert.equal((await client.requestToken(creds)).token, 'tok-1');
      await poolTurn();
      assert.equal((await client.requestToken(creds)).token, 'tok-3');
      assert.deepEqual(server.seen.map((s) => [s.connection, s.before]), [[1, 0], [1, 1], [2, 0]]);
      assert.deepEqual(proxy.connects(), [`localhost:${server.port}`, `localhost:${server.port}`], 'one tunnel per connection, through the proxy');
    } finally {
      await client.close();
      await proxy.stop();
      await server.close();
    }
  });
});
