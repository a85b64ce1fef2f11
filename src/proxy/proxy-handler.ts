/**
 * proxy/: the request path on the listener: the listener and its protocol checks, this handler,
 * attachments and route credentials, target checks, the request body (received whole, or
 * streamed within a per-source share; paced) and its replay copy.
 * May import: shared/, observability/, upstream/, and token/ only through the token manager.
 *
 * This file composes the request path from its three parts: admit.ts (guard, checks, route,
 * refusals), forward.ts (credentials, the engine, retry and the replay after a 401) and respond.ts
 * (answers, status mapping, metrics and the access log); it owns the request's lifetime between them:
 * the body, the client going away, and what ends with the response.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../shared/clock.js';
import type { IpGuard } from '../shared/ip-guard.js';
import { ClientGone } from '../upstream/engine.js';
import { admit, byLongestPrefix, guardCheck, indexRoutes, pickRoute, ROUTE_SCAN_LIMIT } from './admit.js';
import { chooseCredential, type CredentialChoice } from './credential-choice.js';
import { CREDENTIAL_HEADER } from './stripped-names.js';
import { createForwarder } from './forward.js';
import { isLocalSocket } from './listener/local-socket.js';
import type { ProxyMetrics, ProxyRoute } from './proxy-route.js';
import type { ReplayBudget, ReplayTee } from './body/replay-body.js';
import { hasBody, RequestBodies, type RequestBody } from './body/request-body.js';
import { createResponder } from './respond.js';
import { UploadPaces } from './body/upload-pace.js';
import { UploadShare } from './body/upload-share.js';

export type { ProxyMetrics, ProxyRoute, RouteName } from './proxy-route.js';

export interface ProxyHandlerOptions {
  routes: ProxyRoute[];
  guard: IpGuard;
  metrics: ProxyMetrics;
  logger: Logger;
  clock: Clock;
  /** Largest request body copied for a replay, bytes; 0 turns body replay off. */
  replayBodyLimitBytes: number;
  /** Bytes held for replay across all requests in flight. */
  replayBudget: ReplayBudget;
  logRequests: boolean;
  /** `proxy.minUploadBytesPerSecond`: a body being read that falls behind this rate is cut with 408; 0 = off. */
  minUploadBytesPerSecond?: number;
  /**
   * The bounds on request bodies streamed upstream at once on a route (per source, and all sources
   * together: upload-share.ts); more wait, unread. Built once by the sidecar (its gauges read it);
   * unbounded when absent.
   */
  uploadShare?: UploadShare;
  /** Scrubs the sidecar's secrets from an answer to a diagnostic probe (`doctor`; respond.ts). */
  diagnosticRedact?: (text: string) => string;
  /**
   * The credential sets this listener may serve (credential-choice.ts): consulted only when a
   * request carries B2B-Credential or matched no set's route. Absent: the header is only stripped.
   */
  credentialChoice?: CredentialChoice;
}

/**
 * The per-request path: guard → target check → route → request body (whole, or its share) →
 * credentials → upstream → (one replay after a 401) → response. Plain `http` handler; express stays off this path
 * because it doubles the CPU per request.
 */
export function createProxyHandler(options: ProxyHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { metrics, logger, clock } = options;
  const replay = { limit: options.replayBodyLimitBytes, budget: options.replayBudget, onDrop: metrics.replayCaptureDropped };
  const paces = new UploadPaces(options.minUploadBytesPerSecond ?? 0, clock);
  const bodies = new RequestBodies(replay, paces, options.uploadShare ?? new UploadShare(Number.MAX_SAFE_INTEGER));
  const routes = byLongestPrefix(options.routes);
  // Many credential sets' prefixes: an index instead of the scan (one branch on the few-routes path).
  const indexed = routes.length > ROUTE_SCAN_LIMIT ? indexRoutes(routes) : undefined;
  const allowed = guardCheck(options.guard);
  const responder = createResponder({
    metrics, logger, clock, logRequests: options.logRequests,
    ...(options.diagnosticRedact ? { diagnosticRedact: options.diagnosticRedact } : {}),
  });
  const forward = createForwarder({ metrics, logger, write: responder.upstream });
  const choice = options.credentialChoice;
  // The route a request that chooses no set lands on when the shared listener has no default set.
  const unchosen = choice?.unchosen?.credential === undefined ? choice?.unchosen : undefined;

  return function handle(req, res) {
    const started = clock.now();
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    let route = indexed ? indexed(url) : pickRoute(routes, url);
    // Read now: once undici has consumed the request as a body, `req.socket` is null (docs/traps.md T29).
    const source = req.socket.remoteAddress ?? (isLocalSocket(req.socket) ? 'unix' : undefined);
    metrics.requestStarted();
    const respond = (status: number, message: string, headers?: Record<string, string>) =>
      responder.local(res, route.name, method, started, status, message, headers);
    const gone = new ClientGone();
    let body: RequestBody | undefined;
    res.on('close', () => { // once per response (Node's _closed flag); `on` saves `once`'s wrapper
      // The client went away before the response was complete: release the upstream request.
      if (!res.writableFinished) gone.abort();
      // Whatever happened, the body's copy, pace and share end with the response.
      body?.abandon();
      responder.ended(res, route.name, method, url, started, source);
    });

    if (!allowed(req)) {
      metrics.guardDenied();
      logger.warn('request denied by the source guard', { source, forwardedFor: req.headers['x-forwarded-for'] });
      return respond(403, 'source address not allowed');
    }
    // The credential set: a branch on the one-set path (docs/credential-sets.md).
    if (choice !== undefined && (req.headers[CREDENTIAL_HEADER] !== undefined || route === unchosen)) {
      const chosen = chooseCredential(choice, route, req);
      if ('status' in chosen) return respond(chosen.status, chosen.message);
      route = chosen;
    }
    const admitted = admit(route, url, method, req.headers);
    if ('status' in admitted) return respond(admitted.status, admitted.message, admitted.headers);
    const { path } = admitted;
    if (!hasBody(req)) return dispatch(undefined);
    // Received whole first (small), or streamed within the source's share (large or chunked);
    // either way the credentials are the current ones at dispatch.
    body = bodies.open(req, source ?? 'unknown', route.name, () => {
      // Too slow: answer (if nothing went out yet), then release the upstream exchange and its
      // pooled connection, if it has one; the client's connection closes after the answer.
      logger.warn('request body too slow: cut', { route: route.name, method, source, minBytesPerSecond: paces.bytesPerSecond });
      res.shouldKeepAlive = false;
      if (!res.headersSent) respond(408, `request body too slow: under ${paces.bytesPerSecond} bytes/s`);
      gone.abort();
    });
    body.ready(dispatch);

    function dispatch(content: Buffer | ReplayTee | undefined) {
      // Cut as too slow, or gone, while the body was arriving: nothing goes upstream.
      if (gone.aborted) return;
      forward(route, req, res, body, content, gone, started, path).then(
        // Answered: the copy is not needed any more, and the rest of a slow upload no longer
        // holds a service connection.
        () => body?.settle(),
        (err: unknown) => {
          // No token, service unreachable, a failed upload: the engine may never have read the
          // body. Reading the rest (and discarding it) lets the client finish sending and read the
          // answer; a paused request would wedge its keep-alive connection.
          body?.abandon();
          // Client gone: nobody to answer.
          if (!gone.aborted) responder.failed(res, route.name, method, started, err);
        },
      );
    }
  };
}
