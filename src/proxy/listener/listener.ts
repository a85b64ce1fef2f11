import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setServerTimeouts } from '../../shared/server-timeouts.js';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../observability/logger.js';
import { admitInOrder, pendingResponses, whenIdle } from './connection-order.js';
import { dropH2cOffer, offersOnlyH2c, readUpgradeBody, refeedWithoutUpgrade } from './h2c-upgrade.js';
import { protocolRefusal } from './request-protocol.js';
import { sendJson } from '../../shared/send-json.js';
import { clearStaleSocket, createSocketFile, LOCAL_SOCKET, removeSocketFile, type SocketFile } from './local-socket.js';
import { fullListenerLogger, type FullListenerReport } from './full-listener.js';
import { IdleEviction } from './idle-eviction.js';

export interface ListenerLimits {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  maxHeaderBytes: number;
  maxConnections: number;
  /** Most simultaneous connections from one source address; undefined = only `maxConnections`. */
  maxConnectionsPerSource?: number;
  /** How long an idle kept-alive connection stays open after a response; 5 s when absent. */
  keepAliveTimeoutMs?: number;
}

/** Why a connection was refused before any request was read (`max_connections`: Node dropped it, the listener being full). */
export type ConnectionRefusal = 'not_allowed' | 'per_source_limit' | 'max_connections';

/** Decisions taken when a connection opens, before Node's parser sees a byte. */
export interface ConnectionPolicy {
  /** False refuses the connection (the admin listener's `admin.allow`). */
  admit?: (peer: string | undefined) => boolean;
  /** Counts each refused connection (a metric). */
  onRefused?: (reason: ConnectionRefusal) => void;
  /** Sources `maxConnectionsPerSource` does not count (they still count towards `maxConnections`). */
  exemptFromPerSource?: (peer: string | undefined) => boolean;
  /** A unix-socket listener: connections are marked local (the handler's guard lets them through). */
  local?: boolean;
  /** Reports connections dropped because the listener holds `maxConnections` (a log line at most once a minute). */
  full?: FullListenerReport;
  /**
   * At `maxConnections`, close the longest-idle connection to let a new one in (idle-eviction.ts)
   * rather than refuse it: the admin listener, whose probes must get through idle connections.
   */
  evictIdle?: boolean;
  /** Each connection as it opens (refused ones too) and as it closes: the per-listener metrics. */
  onOpen?: () => void;
  onClose?: () => void;
}

/** A refused connection gets its answer and is closed within this, whatever the client does. */
const REFUSED_LINGER_MS = 1000;

/** A plain-HTTP listener with deliberate limits and a graceful drain. */
export interface Listener {
  listen(host: string, port: number): Promise<number>;
  /**
   * Listens on a unix socket at `path` instead: a stale socket is replaced only if nothing answers
   * on it; the file gets `mode` and `gid` (when set) before it appears at `path`, and nothing is
   * done through `path` (local-socket.ts createSocketFile). `close()` removes that file, and only
   * it. Pair with the `local` connection policy.
   */
  listenPath(path: string, mode: number, gid?: number): Promise<void>;
  /** Stops accepting, lets in-flight requests finish for up to `timeoutMs`, then cuts the rest. */
  close(timeoutMs?: number): Promise<void>;
  readonly server: Server;
  readonly inflight: number;
}

const RAW_ANSWERS: Record<number, string> = { 400: 'Bad Request', 403: 'Forbidden', 405: 'Method Not Allowed', 408: 'Request Timeout', 431: 'Request Header Fields Too Large', 501: 'Not Implemented', 503: 'Service Unavailable' };

/**
 * Most body bytes of a request offering h2c that are held while it is handed back to the HTTP
 * parser: Node 26 reads such a body into the request first (h2c-upgrade.ts). 64 MiB, the largest
 * request body the proxy buffers anywhere (proxy.replayBodyLimitBytes' ceiling).
 */
const H2C_BODY_LIMIT_BYTES = 64 * 1024 * 1024;

/** How long an idle client connection stays open after a response, unless the limits say. */
const LISTENER_KEEP_ALIVE_MS = 5000;

/**
 * Wraps a request handler in an `http` server hardened against slow and malformed clients
 * (docs/traps.md T22–23, 30, 32): header and request timeouts, a header size cap (and no header
 * count cap below it), a connection cap, the strict parser (ambiguous Content-Length +
 * Transfer-Encoding framing is a 400, never two requests), HTTP/1.0 and 1.1 only, `chunked` as
 * the only transfer coding, a connection's requests handed over in arrival order, `h2c`
 * upgrade offers ignored and every other upgrade and CONNECT refused.
 */
export function createListener(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  limits: ListenerLimits,
  logger: Logger,
  policy: ConnectionPolicy = {},
): Listener {
  let inflight = 0;
  let closing = false;
  const responseClosed = (): void => {
    inflight--;
  };
  const dispatch = (req: IncomingMessage, res: ServerResponse): void => {
    const refusal = protocolRefusal(req);
    if (refusal) {
      res.shouldKeepAlive = false; // the framing of what follows is in doubt
      sendJson(res, refusal.status, refusal.message);
      return;
    }
    if (req.headers.upgrade !== undefined && offersOnlyH2c(req.headers.upgrade)) dropH2cOffer(req.headers);
    handler(req, res);
  };
  const eviction = policy.evictIdle && !policy.local ? new IdleEviction(limits.maxConnections) : undefined;
  const server = createServer(
    {
      requestTimeout: limits.requestTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      // Node checks those two timeouts only this often (default 30 s), which would let a slow
      // client hold a connection far longer than configured.
      connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
      maxHeaderSize: limits.maxHeaderBytes,
      keepAliveTimeout: limits.keepAliveTimeoutMs ?? LISTENER_KEEP_ALIVE_MS,
      noDelay: true,
      requireHostHeader: true,
    },
    (req, res) => {
      inflight++;
      // `on`, not `once`: a response emits 'close' once (Node's _closed flag), and `once` would
      // allocate a wrapper per request.
      res.on('close', responseClosed);
      if (eviction) holdAgainstEviction(eviction, req, res);
      // While draining, finish this request but do not keep the connection for another.
      if (closing) res.shouldKeepAlive = false;
      admitInOrder(req, res, dispatch);
    },
  );
  // All four explicitly: Node's defaults differ between releases (docs/traps.md T60). No socket
  // inactivity limit: a long download or upload may be silent on one side while the upstream
  // deadlines and the listener's request timeout bound it.
  setServerTimeouts(server, { headersTimeoutMs: limits.headersTimeoutMs, requestTimeoutMs: limits.requestTimeoutMs, keepAliveTimeoutMs: limits.keepAliveTimeoutMs ?? LISTENER_KEEP_ALIVE_MS, idleTimeoutMs: 0 });
  // Node keeps only the first 2000 headers in req.headers while its parser frames the body
  // with all of them: a Content-Length after 2000 lines was invisible here and the body was
  // dropped (docs/traps.md T30). Without a count limit the header byte cap governs.
  server.maxHeadersCount = 0;
  // With eviction the cap is kept as connections open (IdleEviction); Node's own is only a
  // backstop then, with room for evicted sockets still closing and refused ones lingering.
  server.maxConnections = eviction ? limits.maxConnections * 2 : limits.maxConnections;
  // Past maxConnections Node closes each new connection at once and says so only through 'drop'
  // (docs/traps.md T52): count it and say it, or a full listener is invisible.
  const logFull = policy.full ? fullListenerLogger(logger, limits.maxConnections, policy.full) : undefined;
  server.on('drop', () => {
    policy.onRefused?.('max_connections');
    logFull?.();
  });
  const { onOpen, onClose } = policy;
  if (onOpen && onClose) {
    server.prependListener('connection', (socket: Socket) => {
      onOpen();
      socket.once('close', onClose);
    });
  }
  if (policy.local) server.prependListener('connection', (socket: Socket) => { (socket as Socket & { [LOCAL_SOCKET]?: boolean })[LOCAL_SOCKET] = true; });
  else guardConnections(server, limits.maxConnectionsPerSource, policy, logger, eviction, logFull);
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => refuseAfterPending(socket, 405, 'CONNECT is not supported: this is not a forward proxy'));
  server.on('upgrade', (req: IncomingMessage, socket: Socket, bodyHead: Buffer) => {
    if (!offersOnlyH2c(req.headers.upgrade)) {
      refuseAfterPending(socket, 501, 'protocol upgrades are not supported');
      return;
    }
    logger.debug('h2c upgrade offer ignored: served as HTTP/1.1');
    const body = readUpgradeBody(req, H2C_BODY_LIMIT_BYTES);
    whenIdle(socket, () => void body.then((b) => {
      if (b === undefined) rawAnswer(socket, 413, 'request body too large for a request offering an h2c upgrade');
      else refeedWithoutUpgrade(server, socket, req, bodyHead, b);
    }, () => socket.destroy()));
  });
  // A socket whose failed request was answered through its response: the parser reports each
  // later chunk of bytes as another error, and the answer must still get out.
  const answeredInPlace = new WeakSet<Duplex>();
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (answeredInPlace.has(socket)) return;
    const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
    if (err.code !== 'ECONNRESET') logger.debug('malformed or slow client request refused', { code: err.code, status });
    const message = status === 431 ? 'request headers too large' : status === 408 ? 'request timed out' : 'malformed request';
    const pending = pendingResponses(socket);
    if (pending === 0) return rawAnswer(socket, status, message);
    // The error is in the body of the one request being answered (a malformed chunk): while none
    // of its answer has gone out, it is the answer, through its own response, with
    // `Connection: close` (the handler then sees its body fail and ends the upstream exchange).
    // Node does the same when nobody listens for 'clientError' (docs/traps.md T70).
    const current = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
    if (pending === 1 && current && !current.headersSent && !current.destroyed && current.req.complete === false && socket.writable) {
      answeredInPlace.add(socket);
      current.shouldKeepAlive = false;
      sendJson(current, status, status === 400 ? 'malformed request body' : message);
      return;
    }
    // Behind a pipelined request still being answered, or once an answer has begun, a raw answer
    // would be read as (part of) an earlier response, and the failed parser cannot wait: close.
    socket.destroy();
  });

  // The unix socket this listener linked into place (listenPath): removed when it closes.
  let socketFile: SocketFile | undefined;
  const removeOwnSocket = (): void => {
    if (socketFile) removeSocketFile(socketFile);
    socketFile = undefined;
  };
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
    async listenPath(path, mode, gid) {
      await clearStaleSocket(path);
      socketFile = await createSocketFile(path, mode, gid, (at) => new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(at, () => {
          server.off('error', reject);
          resolve();
        });
      }), () => new Promise<void>((resolve) => {
        if (!server.listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }));
    },
    async close(timeoutMs = 0) {
      if (!server.listening) return removeOwnSocket();
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
      removeOwnSocket();
    },
  };
}

/**
 * Judges each connection as it opens, before Node's HTTP parser is attached: a source the policy
 * refuses, or one already holding `perSource` connections, gets a JSON answer and is closed within
 * a second. Judged later (after a request head), idle connections from a refused address could
 * fill `maxConnections` and take the listener from everyone (the admin listener's /healthz among
 * them, and with it the liveness probe).
 */
function guardConnections(server: Server, perSource: number | undefined, policy: ConnectionPolicy, logger: Logger, eviction: IdleEviction | undefined, logFull: (() => void) | undefined): void {
  if (!policy.admit && perSource === undefined && !eviction) return;
  const open = new Map<string, number>();
  // http.Server attaches its parser in its own 'connection' listener; run it only for admitted sockets.
  const attach = server.listeners('connection') as Array<(socket: Socket) => void>;
  server.removeAllListeners('connection');
  // A socket re-fed after an ignored h2c offer (h2c-upgrade.ts) arrives here a second time: judged once.
  const judged = new WeakSet<Socket>();
  server.on('connection', (socket: Socket) => {
    if (judged.has(socket)) {
      for (const listener of attach) listener.call(server, socket);
      return;
    }
    judged.add(socket);
    const peer = socket.remoteAddress;
    if (policy.admit && !policy.admit(peer)) return refuseConnection(socket, 'not_allowed', 403, 'forbidden');
    if (perSource !== undefined && !policy.exemptFromPerSource?.(peer)) {
      const key = peer ?? '';
      const count = (open.get(key) ?? 0) + 1;
      if (count > perSource) {
        logger.debug('connection refused: per-source limit reached', { source: peer, limit: perSource });
        return refuseConnection(socket, 'per_source_limit', 503, 'too many connections from this address');
      }
      open.set(key, count);
      socket.once('close', () => {
        const left = (open.get(key) ?? 1) - 1;
        if (left > 0) open.set(key, left);
        else open.delete(key);
      });
    }
    if (eviction && !eviction.admit(socket)) {
      logFull?.();
      return refuseConnection(socket, 'max_connections', 503, 'the listener is full');
    }
    for (const listener of attach) listener.call(server, socket);
  });

  function refuseConnection(socket: Socket, reason: ConnectionRefusal, status: number, message: string): void {
    policy.onRefused?.(reason);
    socket.on('error', () => undefined);
    socket.resume(); // read and drop whatever the client sends, so it sees our answer, not a reset
    const timer = setTimeout(() => socket.destroy(), REFUSED_LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    rawAnswer(socket, status, message);
  }
}

/** A connection whose request is being answered is not evicted; it is again once the answer is over. */
function holdAgainstEviction(eviction: IdleEviction, req: IncomingMessage, res: ServerResponse): void {
  const socket = req.socket;
  eviction.busy(socket);
  res.once('close', () => eviction.idle(socket));
}

/**
 * Answers a request Node detached from its parser (CONNECT, Upgrade) on the raw socket, once
 * the responses to earlier pipelined requests have gone out, so it is never read as theirs.
 */
function refuseAfterPending(socket: Duplex, status: number, message: string): void {
  whenIdle(socket, () => rawAnswer(socket, status, message));
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
