import { EventEmitter } from 'node:events';
import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import { Agent } from 'node:https';
import { Readable } from 'node:stream';
import httpProxy from 'http-proxy';
import { trustContext } from './tls.js';
import type { EngineOptions, ProxyEngine, UpstreamResponse } from './proxy-engine.js';
import { streamBody } from './upstream-body.js';

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
  constructor(readonly method: string, readonly url: string, readonly headers: Record<string, string | string[]>) {
    super();
  }
}

/**
 * Proxy engine on http-proxy 1.18.1 (the design's choice; unmaintained since 2020). Its traps
 * are neutralised here: credentials travel in the header object given to `web()`, never in a
 * `proxyReq` listener (PITFALLS 2); `Expect`/`Trailer` never reach it (stripped upstream of
 * this file, PITFALLS 3); `changeOrigin` pins Host and SNI to the service (PITFALLS 5); a
 * client abort destroys the upstream request (PITFALLS 4); our own header deadline replaces
 * `proxyTimeout` (PITFALLS 6); no `followRedirects` (PITFALLS 11); keep-alive agent (PITFALLS 9).
 */
export function createHttpProxyEngine(options: EngineOptions): ProxyEngine {
  const agent = new Agent({
    keepAlive: true,
    maxSockets: options.maxSockets,
    maxFreeSockets: options.maxSockets,
    timeout: options.keepAliveTimeoutMs,
    scheduling: 'lifo',
    ...(options.ca ? { secureContext: trustContext(options.ca) } : {}),
    rejectUnauthorized: true,
  });
  const proxy = httpProxy.createProxyServer({
    target: options.baseUrl.href,
    agent,
    changeOrigin: true,
    selfHandleResponse: true,
    xfwd: false,
    secure: true,
    followRedirects: false,
    // No `ca` here: http-proxy would copy it into every request; the agent's context applies.
  });
  // Without an 'error' listener http-proxy crashes the process (PITFALLS 1); errors are also
  // delivered to each call's callback below.
  proxy.on('error', () => undefined);
  proxy.on('proxyReq', (proxyReq: ClientRequest, req: IncomingMessage) => {
    const exchange = req as unknown as Exchange;
    exchange.proxyReq = proxyReq;
    exchange.emit('upstream', proxyReq);
  });
  proxy.on('proxyRes', (proxyRes: IncomingMessage, req: IncomingMessage) => {
    (req as unknown as Exchange).emit('upstream-response', proxyRes);
  });

  return {
    send(request) {
      return new Promise<UpstreamResponse>((resolve, reject) => {
        const exchange = new Exchange(request.method, request.path, request.headers);
        let settled = false;
        const finish = (err: Error | undefined, response?: UpstreamResponse) => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          request.signal.offAbort(onAbort);
          if (err) reject(err);
          else resolve(response!);
        };
        const destroyUpstream = (err: Error) => {
          if (exchange.proxyReq) exchange.proxyReq.destroy(err);
          else exchange.once('upstream', (proxyReq: ClientRequest) => proxyReq.destroy(err));
          finish(err);
        };
        const onAbort = () => destroyUpstream(Object.assign(new Error('client aborted'), { code: 'UND_ERR_ABORTED' }));
        const deadline = setTimeout(
          () => destroyUpstream(Object.assign(new Error('upstream response headers timed out'), { code: 'SIDECAR_ERR_UPSTREAM_TIMEOUT' })),
          options.headersTimeoutMs,
        );
        if (request.signal.aborted) return onAbort();
        request.signal.onAbort(onAbort);
        exchange.once('upstream-response', (proxyRes: IncomingMessage) => {
          // Idle deadline while the body streams: an upstream dripping bytes must still end.
          const socket = proxyRes.socket;
          const stalled = () => proxyRes.destroy(Object.assign(new Error('upstream body stalled'), { code: 'UND_ERR_BODY_TIMEOUT' }));
          socket.setTimeout(options.bodyTimeoutMs);
          socket.on('timeout', stalled);
          proxyRes.once('close', () => {
            socket.off('timeout', stalled);
            socket.setTimeout(options.keepAliveTimeoutMs);
          });
          finish(undefined, { status: proxyRes.statusCode ?? 502, headers: proxyRes.headers, body: streamBody(proxyRes) });
        });
        const body = request.body === undefined ? Readable.from([]) : Buffer.isBuffer(request.body) ? Readable.from([request.body]) : request.body;
        proxy.web(
          exchange as unknown as IncomingMessage,
          RESPONSE_STANDIN, // with selfHandleResponse only `headersSent`/`finished` are read
          { buffer: body },
          (err: Error) => finish(err),
        );
      });
    },
    async close() {
      proxy.close();
      agent.destroy();
    },
  };
}
