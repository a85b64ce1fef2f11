import { EventEmitter } from 'node:events';
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import { Agent } from 'node:https';
import { Readable } from 'node:stream';
import httpProxy from '@podium/node-http-proxy';
import httpProxyCommon from '@podium/node-http-proxy/lib/http-proxy/common.js';
import webIncomingPasses from '@podium/node-http-proxy/lib/http-proxy/passes/web-incoming.js';
import { systemClock, type Clock } from '../shared/clock.js';
import { deadlineFor } from '../shared/routes.js';
import { KeepAliveLearner } from './keep-alive-learner.js';
import { trustContext } from '../shared/tls.js';
import { routeAgentThroughEgress } from './egress.js';
import { markStaleConnectionFailure } from './upstream-retry.js';
import { basePathOf, type EngineOptions, type ProxyEngine, type UpstreamRequest, type UpstreamResponse } from './engine.js';
import { streamBody } from './upstream-body.js';
import { closedAfterCertificateRequest } from '../shared/tls-alert.js';

// http-proxy joins the target's path and the request path with `.replace(/\/+/g, '/')`, so `/a//b`
// went upstream as `/a/b` while the undici engine sends it as is. This engine builds the full
// path itself (`prependPath: false`; `toProxy: true` also skips a url.parse that re-escapes it),
// so the join only has to pass it through. Nothing else in the process uses http-proxy.
httpProxyCommon.urlJoin = (base: string, path: string) => base + path;

/**
 * The target as the already-parsed object http-proxy reads (`protocol`, `host`, `hostname`, `port`):
 * given a string, it calls `url.parse()`, which Node deprecates (DEP0169) and warns about on stderr.
 * `hostname` goes to `https.request` as is, so an IPv6 literal loses its brackets; the path is not
 * read (`prependPath: false`).
 */
function targetOf(url: URL): { protocol: string; host: string; hostname: string; port: string } {
  return { protocol: url.protocol, host: url.host, hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'), port: url.port };
}

/** Framing for a streamed body of unknown length (Content-Length absent): chunked, never raw. */
const CHUNKED = Object.freeze({ 'transfer-encoding': 'chunked' });

/** When an agent socket was last released to the pool (clock ms). */
const FREED_AT = Symbol('b2b-sidecar.freed-at');
type PooledSocket = { [FREED_AT]?: number };

/** The client response is ours to write; http-proxy only checks these two flags. */
const RESPONSE_STANDIN = Object.freeze({ headersSent: false, finished: false }) as unknown as ServerResponse;

/**
 * What http-proxy sees as "the request": only method, url and headers are read when the body is
 * given through its `buffer` option. Events flow through it so each call can find its own
 * response, upstream request and error.
 */
class Exchange extends EventEmitter {
  readonly socket = { destroyed: false };
  proxyReq: ClientRequest | undefined;
  /** How long the pooled socket had been idle when this request took it; -1: a new socket. */
  idleMs = -1;
  /** Clock ms when the request was fully written; -1 until then. */
  sentAt = -1;
  /** An interim (1xx) answer came: the service has the request, so a failure now is no race. */
  interim = false;
  constructor(readonly method: string, readonly url: string, readonly headers: Record<string, string | string[]>) {
    super();
  }
}

/**
 * Proxy engine on http-proxy 1.18.1 (the design's choice; unmaintained since 2020), as the
 * `@podium/node-http-proxy` fork publishes it: the same code with `util._extend` (deprecated,
 * DEP0060) replaced by `Object.assign`, so the internals adjusted below are the same. Its traps
 * are neutralised here: credentials travel in the header object given to `web()`, never in a
 * `proxyReq` listener (docs/traps.md T2); `Expect`/`Trailer` never reach it (stripped upstream of
 * this file, docs/traps.md T3); `changeOrigin` pins Host and SNI to the service (docs/traps.md T5); a
 * client abort destroys the upstream request (docs/traps.md T4); our own header deadline replaces
 * `proxyTimeout` (docs/traps.md T6); no `followRedirects` (docs/traps.md T11); keep-alive agent (docs/traps.md T9).
 * Every body goes upstream with explicit framing, and http-proxy's `deleteLength` pass is
 * removed (see below).
 */
export function createHttpProxyEngine(options: EngineOptions): ProxyEngine {
  const basePath = basePathOf(options.baseUrl);
  const clock = options.clock ?? systemClock;
  const tls = { ...(options.ca ? { secureContext: trustContext(options.ca) } : {}), rejectUnauthorized: true };
  const agent = new Agent({
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: options.maxSockets,
    timeout: options.keepAliveTimeoutMs,
    scheduling: 'lifo',
    ...tls,
  });
  // Retries after a stale keep-alive socket get a connection of their own.
  const freshAgent = new Agent({ keepAlive: false, maxSockets: options.maxSockets, ...tls });
  routeAgentThroughEgress(agent, options.egress);
  routeAgentThroughEgress(freshAgent, options.egress);
  agent.on('free', (socket: PooledSocket) => void (socket[FREED_AT] = clock.now()));
  // Node's agent reads `options.timeout` each time a socket goes back to the pool.
  const agentOptions = (agent as unknown as { options: { timeout: number } }).options;
  const learner = new KeepAliveLearner(options.keepAliveTimeoutMs, (ms) => void (agentOptions.timeout = ms), options.logger);
  const proxy = httpProxy.createProxyServer({
    target: targetOf(options.baseUrl),
    agent,
    changeOrigin: true,
    selfHandleResponse: true,
    xfwd: false,
    secure: true,
    followRedirects: false,
    prependPath: false,
    toProxy: true,
    // No `ca` here: http-proxy would copy it into every request; the agent's context applies.
  });
  // `deleteLength` sets `content-length: 0` on a DELETE or OPTIONS without one (and drops
  // transfer-encoding) while the body is still written: on a keep-alive upstream connection that
  // body is read as a second request, and the next client's credentialed request becomes its
  // body (request smuggling). Removed by identity: minified bundles rename functions.
  const passes = (proxy as unknown as { webPasses: unknown[] }).webPasses;
  const deleteLength = passes.indexOf(webIncomingPasses.deleteLength);
  if (deleteLength === -1) throw new Error('http-proxy: the deleteLength pass to remove was not found');
  passes.splice(deleteLength, 1);
  // Without an 'error' listener http-proxy crashes the process (docs/traps.md T1); errors are also
  // delivered to each call's callback below.
  proxy.on('error', () => undefined);
  proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage) => {
    const exchange = req as unknown as Exchange;
    exchange.proxyReq = proxyReq;
    // http-proxy emits proxyReq from the request's 'socket' event: the socket is assigned.
    const freedAt = (proxyReq.socket as PooledSocket | null)?.[FREED_AT];
    if (proxyReq.reusedSocket && freedAt !== undefined) {
      exchange.idleMs = clock.now() - freedAt;
      proxyReq.once('finish', () => void (exchange.sentAt = clock.now()));
      proxyReq.once('information', () => void (exchange.interim = true));
    }
    exchange.emit('upstream', proxyReq);
  });
  proxy.on('proxyRes', (proxyRes: IncomingMessage, req: IncomingMessage) => {
    (req as unknown as Exchange).emit('upstream-response', proxyRes);
  });

  const ctx: EngineContext = {
    proxy, basePath, clock, learner, freshAgent, headersTimeoutMs: options.headersTimeoutMs, bodyTimeoutMs: options.bodyTimeoutMs,
    // Both timers of a path deadline (engine.ts), compiled once.
    byPath: options.pathDeadlines?.map(({ prefix, ms }) => ({ prefix, headersTimeoutMs: ms, bodyTimeoutMs: Math.max(ms, options.bodyTimeoutMs) })),
  };
  return {
    send: (request) => sendExchange(ctx, request),
    async close() {
      proxy.close();
      agent.destroy();
      freshAgent.destroy();
    },
  };
}

/** What each request needs of the engine set up by createHttpProxyEngine. */
interface EngineContext {
  proxy: ReturnType<typeof httpProxy.createProxyServer>;
  basePath: string;
  clock: Clock;
  learner: KeepAliveLearner;
  freshAgent: Agent;
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  /** The path deadlines, longest prefix first; undefined when none is configured. */
  byPath: Array<{ prefix: string; headersTimeoutMs: number; bodyTimeoutMs: number }> | undefined;
}

/**
 * One request through http-proxy: our own header deadline (docs/traps.md T6), abort when the client
 * goes (docs/traps.md T4), the body-stall deadline, the early-answer cut (docs/traps.md T33) and explicit
 * framing for every body; stale keep-alive failures are marked for the retry.
 */
function sendExchange(ctx: EngineContext, request: UpstreamRequest): Promise<UpstreamResponse> {
  const timeouts = (ctx.byPath && deadlineFor(ctx.byPath, request.path)) || ctx;
  return new Promise<UpstreamResponse>((resolve, reject) => {
    const exchange = new Exchange(request.method, ctx.basePath + request.path, request.headers);
    const body = request.body;
    const upload = body !== undefined && !Buffer.isBuffer(body) ? body : undefined;
    let settled = false;
    const finish = (err: Error | undefined, response?: UpstreamResponse) => {
      if (settled) return;
      settled = true;
      // Before any response byte on a socket that had carried one: the keep-alive race.
      if (err && exchange.idleMs >= 0 && !exchange.interim) {
        const afterSent = exchange.sentAt < 0 ? -1 : ctx.clock.now() - exchange.sentAt;
        if (markStaleConnectionFailure(err, afterSent)) ctx.learner.staleAfterIdle(exchange.idleMs);
      }
      clearTimeout(deadline);
      request.signal.offAbort(onAbort);
      // A new connection closed before any answer by a server that asked for a client
      // certificate: its refusal, under TLS 1.3 without an alert (docs/traps.md T62).
      if (err && exchange.idleMs < 0 && (err as { code?: string }).code === 'ECONNRESET' && err.cause === undefined) {
        const refused = closedAfterCertificateRequest(exchange.proxyReq?.socket);
        if (refused) err.cause = refused;
      }
      if (err) reject(err);
      else resolve(response!);
    };
    const destroyUpstream = (err: Error) => {
      if (exchange.proxyReq) exchange.proxyReq.destroy(err);
      else exchange.once('upstream', (proxyReq: ClientRequest) => proxyReq.destroy(err));
      finish(err);
    };
    const onAbort = () => destroyUpstream(Object.assign(new Error('client aborted'), { code: 'UND_ERR_ABORTED' }));
    const armDeadline = () => setTimeout(
      () => destroyUpstream(Object.assign(new Error('upstream response headers timed out'), { code: 'SIDECAR_ERR_UPSTREAM_TIMEOUT' })),
      timeouts.headersTimeoutMs,
    );
    // Restarted whenever a streamed upload makes progress (the body's own report): a slow client
    // is not the service's delay (the proxy's minimum upload rate bounds the client).
    const deadline = armDeadline();
    if (upload) upload.onProgress = () => void (settled || deadline.refresh());
    if (request.signal.aborted) return onAbort();
    request.signal.onAbort(onAbort);
    exchange.once('upstream-response', (proxyRes: IncomingMessage) => {
      // Idle deadline while the body streams: an upstream dripping bytes must still end.
      const socket = proxyRes.socket;
      const stalled = () => proxyRes.destroy(Object.assign(new Error('upstream body stalled'), { code: 'UND_ERR_BODY_TIMEOUT' }));
      socket.setTimeout(timeouts.bodyTimeoutMs);
      socket.on('timeout', stalled);
      // The agent has set the socket's idle timeout again by now (it does when the response
      // ends, from its options and the service's Keep-Alive hint): only our listener goes.
      proxyRes.once('close', () => socket.off('timeout', stalled));
      // The service answered before reading the whole upload: the piping would stall and the
      // socket stay assigned for good, so after maxSockets of these every request waits
      // (docs/traps.md T33). The socket cannot be reused mid-body: cut it, and let the client finish.
      const proxyReq = exchange.proxyReq;
      if (proxyReq && upload) {
        proxyRes.once('end', () => {
          if (proxyReq.writableFinished) return;
          upload.unpipe(proxyReq);
          proxyReq.destroy();
          upload.resume();
        });
      }
      finish(undefined, { status: proxyRes.statusCode ?? 502, headers: proxyRes.headers, body: streamBody(proxyRes) });
    });
    // Explicit framing for every body: Node's client sends a DELETE/OPTIONS body without
    // Content-Length or chunked framing as raw bytes, which the upstream reads as a new request.
    let web: { buffer: Readable; headers?: Record<string, string>; agent?: Agent };
    if (body === undefined) web = { buffer: Readable.from([]) };
    else if (Buffer.isBuffer(body)) web = { buffer: Readable.from([body]), headers: { 'content-length': String(body.length) } };
    else web = request.headers['content-length'] === undefined ? { buffer: body, headers: CHUNKED } : { buffer: body };
    if (request.fresh) web.agent = ctx.freshAgent;
    ctx.proxy.web(
      exchange as unknown as IncomingMessage,
      RESPONSE_STANDIN, // with selfHandleResponse only `headersSent`/`finished` are read
      web, // `headers` are merged over the request's by http-proxy, after the passes ran
      (err: Error) => finish(err),
    );
  });
}
