import type { Dispatcher, Pool as PoolTypes } from 'undici';
import { systemClock } from '../shared/clock.js';
import { deadlineFor } from '../shared/routes.js';
import { DeadlineQueue } from './deadline-queue.js';
import { KeepAliveLearner } from './keep-alive-learner.js';
import { undiciConnect } from './egress.js';
import { basePathOf, type EngineOptions, type ProxyEngine, type UpstreamResponse } from './engine.js';
import { Pool } from './undici-core.js';
import { trackedClients } from './undici-connections.js';
import { clientAborted, UndiciExchange, type ConnectionReports, type ExchangeDeadlines } from './undici-exchange.js';

/**
 * Proxy engine on undici's connection pool: keep-alive TLS, a header deadline from dispatch
 * (queue + connect + headers) and native body timeouts (a clean 504 instead of http-proxy's
 * ECONNRESET, docs/traps.md T6), a cap on pauses by a client that stopped reading, abort when the client goes
 * (no leaked upstream requests, docs/traps.md T4), and no redirect handling at all. Requests go
 * through the dispatcher's handler interface (see undici-exchange.ts).
 */
export function createUndiciEngine(options: EngineOptions): ProxyEngine {
  const basePath = basePathOf(options.baseUrl);
  const clock = options.clock ?? systemClock;
  const clients = trackedClients(clock);
  const poolOptions: PoolTypes.Options = {
    connections: options.maxSockets,
    pipelining: 1,
    // HTTP/1.1 only: the bundle gives undici's HTTP/2 client no node:http2 (scripts/bundle.mjs).
    allowH2: false,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    keepAliveMaxTimeout: options.keepAliveTimeoutMs,
    // A `Keep-Alive: timeout=N` hint keeps connections N − 1 s, as Node's agent does (undici's
    // default margin of 2 s turns keep-alive off for the common timeout=2).
    keepAliveTimeoutThreshold: 1000,
    headersTimeout: options.headersTimeoutMs,
    bodyTimeout: options.bodyTimeoutMs,
    // SNI and the certificate check always use the service's host, never the client's Host (docs/traps.md T5).
    connect: undiciConnect(options.egress, options.ca, isIpLiteral(options.baseUrl.hostname) ? undefined : options.baseUrl.hostname) as PoolTypes.Options['connect'],
  };
  const pool = new Pool(options.baseUrl.origin, { ...poolOptions, factory: clients.factory as PoolTypes.Options['factory'] });
  // Retries after a stale keep-alive connection: `pipelining: 0` makes undici close each
  // connection after its response, so every request here gets a connection of its own.
  let freshPool: Pool | undefined;
  const learner = new KeepAliveLearner(options.keepAliveTimeoutMs, (ms) => clients.setIdleTimeout(ms), options.logger);
  const reports: ConnectionReports = { clock, staleAfterIdle: (idleMs) => learner.staleAfterIdle(idleMs) };
  // undici's own header timeout starts only once the request is written to a connection: a
  // request waiting in the pool's queue (every connection busy) had no deadline at all.
  const deadlines: ExchangeDeadlines = {
    headers: new DeadlineQueue(options.headersTimeoutMs),
    paused: new DeadlineQueue(options.bodyTimeoutMs),
  };
  // A path deadline gets a queue of its own (a queue holds one duration) and undici's two timers
  // for its dispatches (engine.ts): compiled once, so a request pays one prefix lookup.
  const byPath = options.pathDeadlines?.map(({ prefix, ms }) => ({
    prefix,
    deadlines: { headers: new DeadlineQueue(ms), paused: deadlines.paused } satisfies ExchangeDeadlines,
    headersTimeout: ms,
    bodyTimeout: Math.max(ms, options.bodyTimeoutMs),
  }));
  let closed: Promise<void> | undefined;
  return {
    send(request) {
      // A client gone during a token renewal must not cost a dispatch (and, once connected, a socket).
      if (request.signal.aborted) return Promise.reject(clientAborted());
      const path = byPath && deadlineFor(byPath, request.path);
      return new Promise<UpstreamResponse>((resolve, reject) => {
        const exchange = new UndiciExchange(request.signal, resolve, reject, path ? path.deadlines : deadlines, reports);
        const body = request.body;
        if (body !== undefined && !Buffer.isBuffer(body)) body.onProgress = () => exchange.bodyProgress();
        if (closed) return reject(Object.assign(new Error('the engine is closed'), { code: 'UND_ERR_CLOSED' }));
        const dispatcher: Dispatcher = request.fresh ? (freshPool ??= new Pool(options.baseUrl.origin, { ...poolOptions, pipelining: 0 })) : pool;
        const dispatch: Dispatcher.DispatchOptions = {
          method: request.method as 'GET',
          path: basePath + request.path,
          headers: request.headers,
          body: body ?? null,
          // undici closes the connection after any request whose body its method does not
          // "expect" (GET, DELETE, OPTIONS with a body): a TLS handshake per such request, where
          // Node's agent and nginx keep the connection (docs/traps.md T54). HEAD keeps undici's close.
          reset: body !== undefined && request.method !== 'HEAD' ? false : undefined,
        };
        // A path deadline's values for both of undici's timers; without one, the pool's (the route's).
        if (path) {
          dispatch.headersTimeout = path.headersTimeout;
          dispatch.bodyTimeout = path.bodyTimeout;
        }
        dispatcher.dispatch(dispatch, exchange);
      });
    },
    close() {
      const close = (p: Pool) => p.close().catch(() => p.destroy());
      closed ??= Promise.all([close(pool), freshPool && close(freshPool)]).then(() => undefined);
      return closed;
    },
  };
}

function isIpLiteral(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.startsWith('[');
}
