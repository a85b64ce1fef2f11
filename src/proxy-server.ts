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

/** Responses still pending on a connection (pipelined requests queue behind each other). */
const PENDING = Symbol('b2b-sidecar.pending');
type CountedSocket = { [PENDING]?: number };

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
      const socket = req.socket as typeof req.socket & CountedSocket;
      socket[PENDING] = (socket[PENDING] ?? 0) + 1;
      res.once('close', () => {
        inflight--;
        socket[PENDING]!--;
      });
      // While draining, finish this request but do not keep the connection for another.
      if (closing) res.shouldKeepAlive = false;
      handler(req, res);
    },
  );
  server.maxConnections = limits.maxConnections;
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => rawAnswer(socket, 405, 'CONNECT is not supported: this is not a forward proxy'));
  server.on('upgrade', (_req: IncomingMessage, socket: Duplex) => rawAnswer(socket, 501, 'protocol upgrades are not supported'));
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    if (err.code !== 'ECONNRESET') logger.debug('malformed or slow client request refused', { code: err.code, status });
    // A bad pipelined request behind one still being answered: a raw answer now would be read
    // as the response to the earlier request, so close the connection instead.
    if (((socket as Duplex & CountedSocket)[PENDING] ?? 0) > 0) {
      socket.destroy();
      return;
    }
    rawAnswer(socket, status, status === 431 ? 'request headers too large' : status === 408 ? 'request timed out' : 'malformed request');
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
