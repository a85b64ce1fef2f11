import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'winston';

export interface ListenerLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  maxHeaderBytes: number;
  maxConnections: number;
}

/** A plain-HTTP listener with deliberate limits and a graceful drain. */
export interface Listener {
  listen(host: string, port: number): Promise<number>;
  /** Stops accepting, lets in-flight requests finish for up to `timeoutMs`, then cuts the rest. */
  close(timeoutMs?: number): Promise<void>;
  readonly server: Server;
  readonly inflight: number;
}

/** Responses not closed yet on a connection, oldest first (pipelined requests queue behind each other). */
const PENDING = Symbol('b2b-sidecar.pending');
type CountedSocket = Duplex & { [PENDING]?: ServerResponse[] };
type NodeResponse = ServerResponse & { _closed?: boolean };

const RAW_ANSWERS: Record<number, string> = { 400: 'Bad Request', 405: 'Method Not Allowed', 408: 'Request Timeout', 431: 'Request Header Fields Too Large', 501: 'Not Implemented' };

/**
 * Wraps a request handler in an `http` server hardened against slow and malformed clients
 * (PITFALLS 22–23): header and request timeouts, a header size cap, a connection cap, the
 * strict parser (ambiguous Content-Length + Transfer-Encoding framing is a 400, never two
 * requests), and explicit refusal of CONNECT and Upgrade.
 */
export function createListener(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  limits: ListenerLimits,
  logger: Logger,
): Listener {
  let inflight = 0;
  let closing = false;
  const server = createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      // Node checks those two timeouts only this often (default 30 s), which would let a slow
      // client hold a connection far longer than configured.
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
      maxHeaderSize: limits.maxHeaderBytes,
      keepAliveTimeout: 5000,
      noDelay: true,
      requireHostHeader: true,
    },
    (req, res) => {
      inflight++;
      const socket = req.socket as CountedSocket;
      let pending = socket[PENDING];
      if (!pending) {
        pending = socket[PENDING] = [];
        socket.once('close', closePending); // one listener per connection, not per request
      }
      pending.push(res);
      res.once('close', () => {
        inflight--;
        pending.splice(pending.indexOf(res), 1);
      });
      // While draining, finish this request but do not keep the connection for another.
      if (closing) res.shouldKeepAlive = false;
      handler(req, res);
    },
  );
  server.maxConnections = limits.maxConnections;
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => refuse(socket, 405, 'CONNECT is not supported: this is not a forward proxy'));
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => refuse(socket, 501, 'protocol upgrades are not supported'));
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    if (err.code !== 'ECONNRESET') logger.debug('malformed or slow client request refused', { code: err.code, status });
    refuse(socket, status, status === 431 ? 'request headers too large' : status === 408 ? 'request timed out' : 'malformed request');
  });

  return {
    server,
    get inflight() {
      return inflight;
    },
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      });
    },
    async close(timeoutMs = 0) {
      if (!server.listening) return;
      closing = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + timeoutMs;
      while (inflight > 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
        server.closeIdleConnections();
      }
      server.closeAllConnections();
      await closed;
    },
  };
}

/**
 * Answers a request Node hands over outside the request handler (CONNECT, Upgrade, a malformed
 * one) on the raw socket. Behind a pipelined request still being answered, that answer would be
 * read as the response to the earlier request, so the connection is closed instead.
 */
function refuse(socket: CountedSocket, status: number, message: string): void {
  if ((socket[PENDING]?.length ?? 0) > 0) {
    socket.destroy();
    return;
  }
  rawAnswer(socket, status, message);
}

/**
 * Node 20 emits 'close' only on the response that holds the socket: responses queued behind it
 * (pipelining) never close when the client goes, so their upstream requests, in-flight counts
 * and log lines would leak. They are closed here the way Node closes the current one
 * (`emitCloseNT` in lib/_http_server.js, whose `_closed` flag keeps either side from closing
 * a response twice).
 */
function closePending(this: CountedSocket): void {
  const pending = this[PENDING]!;
  if (pending.length === 0) return;
  for (const res of [...pending] as NodeResponse[]) { // each 'close' removes its response
    if (res._closed) continue;
    res.destroyed = true;
    res._closed = true;
    res.emit('close');
  }
}

function rawAnswer(socket: Duplex, status: number, message: string): void {
  if (!(socket as Socket).writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify({ message });
  socket.end(
    `HTTP/1.1 ${status} ${RAW_ANSWERS[status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
