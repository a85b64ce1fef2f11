import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'winston';
import { rewriteCookie, rewriteQuery } from './attach.js';
import type { Clock } from './clock.js';
import type { CredentialSource, RouteCredentials } from './credential-source.js';
import { SidecarError } from './errors.js';
import { connectionNominated, STRIPPED_REQUEST_HEADERS, STRIPPED_RESPONSE_HEADERS } from './hop-by-hop.js';
import type { IpGuard } from './ip-guard.js';
import { ClientGone, type ProxyEngine, type UpstreamResponse } from './proxy-engine.js';
import { planBody, type BodyPlan } from './request-body.js';
import { checkRequestTarget } from './request-target.js';
import { answerForUpstreamError } from './upstream-error.js';
import { sendJson } from './send-json.js';
import { bufferedBody } from './upstream-body.js';

export type RouteName = 'service' | 'localization';

/** One upstream the listener forwards to. Routes are matched by path prefix, longest first. */
export interface ProxyRoute {
  name: RouteName;
  /** Path prefix ('' matches everything); stripped before forwarding. */
  prefix: string;
  engine: ProxyEngine;
  /** Allowed methods; undefined allows all. */
  methods?: ReadonlySet<string>;
  credentials: CredentialSource;
  /** Lower-case client header names removed before the route's own are attached. */
  stripHeaders: ReadonlySet<string>;
  stripQuery: ReadonlySet<string>;
  stripCookies: ReadonlySet<string>;
}

/** The metric hooks the proxy calls (see metrics.ts). */
export interface ProxyMetrics {
  requestStarted(): void;
  responseStarted(route: RouteName, method: string, code: number, seconds: number): void;
  requestEnded(): void;
  guardDenied(): void;
  upstreamUnauthorized(): void;
}

export interface ProxyHandlerOptions {
  routes: ProxyRoute[];
  guard: IpGuard;
  metrics: ProxyMetrics;
  logger: Logger;
  clock: Clock;
  replayBodyLimitBytes: number;
  logRequests: boolean;
}

/** Largest 401 body kept aside so it can still be passed back if the token renewal fails. */
const MAX_HELD_401_BYTES = 64 * 1024;
const GUARD_DECISION = Symbol('b2b-sidecar.guard');
type GuardedSocket = { [GUARD_DECISION]?: boolean };

/**
 * The per-request path: guard → target check → route → credentials → body plan → upstream →
 * (one replay after a 401) → response. Plain `http` handler; express stays off this path
 * because it doubles the CPU per request (issue 7).
 */
export function createProxyHandler(options: ProxyHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { guard, metrics, logger, clock } = options;
  const routes = [...options.routes].sort((a, b) => b.prefix.length - a.prefix.length);

  const allowed = (req: IncomingMessage): boolean => {
    if (guard.peerOnly) {
      const socket = req.socket as typeof req.socket & GuardedSocket;
      // One decision per connection: the peer cannot change on a keep-alive socket.
      return (socket[GUARD_DECISION] ??= guard.allows(guard.clientAddress(req.socket.remoteAddress, undefined)));
    }
    return guard.allows(guard.clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for']));
  };

  return function handle(req, res) {
    const started = clock.now();
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const route = pickRoute(routes, url);
    metrics.requestStarted();
    const respond = (status: number, message: string, headers?: Record<string, string>) => {
      metrics.responseStarted(route.name, method, status, (clock.now() - started) / 1000);
      metrics.localResponse(route.name, status);
      sendJson(res, status, message, headers);
    };
    const gone = new ClientGone();
    res.once('close', () => {
      // The client went away before the response was complete: release the upstream request.
      if (!res.writableFinished) gone.abort();
      metrics.requestEnded();
      if (options.logRequests) {
        logger.info('request', {
          method, route: route.name, status: res.headersSent ? res.statusCode : 499,
          durationMs: Math.round(clock.now() - started), source: req.socket.remoteAddress,
        });
      }
    });

    if (!allowed(req)) {
      metrics.guardDenied();
      logger.warn('request denied by the source guard', { source: req.socket.remoteAddress, forwardedFor: req.headers['x-forwarded-for'] });
      return respond(403, 'source address not allowed');
    }
    const badTarget = checkRequestTarget(url);
    if (badTarget) return respond(400, badTarget);
    if (route.methods && !route.methods.has(method)) {
      return respond(405, `method ${method} not allowed on this route`, { allow: [...route.methods].join(', ') });
    }
    // An upstream that reflects TRACE would hand the attached token and ApiKey back to the client.
    // (TRACK never gets here: Node's parser answers unknown methods with 400.)
    // 501: refused for every resource (a 405 would owe an Allow header listing the others).
    if (method === 'TRACE') return respond(501, 'TRACE is not supported: it would reflect the credentials the sidecar attaches');

    const path = upstreamPath(url, route.prefix);
    if (path !== url) {
      // Removing the prefix can expose a new start: `/l10n//evil.example/x` becomes `//evil.example/x`.
      const badPath = checkRequestTarget(path);
      if (badPath) return respond(400, badPath);
    }
    // Credentials are taken only once the body is read: a slow upload must not carry a token
    // that expired while it was being buffered.
    const go = (body: BodyPlan) => {
      const credentials = route.credentials.current();
      return credentials
        ? forward(route, req, res, credentials, body, gone, started, path)
        : route.credentials.acquire().then((c) => forward(route, req, res, c, body, gone, started, path));
    };
    const bodyPlan = planBody(req, options.replayBodyLimitBytes);
    if (bodyPlan instanceof Promise) bodyPlan.then(go).catch(fail);
    else go(bodyPlan).catch(fail);

    function fail(err: unknown) {
      if (gone.aborted || res.destroyed) return; // client gone: nobody to answer
      const answer = answerForUpstreamError(err);
      if (!(err instanceof SidecarError)) logger.warn('upstream request failed', { route: route.name, status: answer.status, reason: answer.message, code: (err as { code?: string }).code });
      if (res.headersSent) res.destroy();
      else respond(answer.status, answer.message, answer.status === 503 ? { 'retry-after': '1' } : undefined);
    }
  };

  async function forward(
    route: ProxyRoute, req: IncomingMessage, res: ServerResponse, credentials: RouteCredentials,
    body: BodyPlan, signal: ClientGone, started: number, path: string,
  ): Promise<void> {
    const method = req.method ?? 'GET';
    const send = (c: RouteCredentials) => route.engine.send({
      method,
      path: route.stripQuery.size || c.prepared.query ? rewriteQuery(path, route.stripQuery, c.prepared.query) : path,
      headers: outgoingHeaders(req, route, c),
      body: body.kind === 'buffered' ? body.body : body.kind === 'stream' ? req : undefined,
      signal,
    });
    let upstream = await send(credentials);
    if (upstream.status === 401 && route.credentials.renewAfterUnauthorized) {
      metrics.upstreamUnauthorized();
      if (body.kind === 'stream') {
        // The body is gone, so no replay; but the token is still renewed for the next requests.
        route.credentials.renewAfterUnauthorized(credentials).catch(() => undefined);
      } else {
        // The service did not process a 401'd request, so replaying any method once is safe.
        const held = await hold(upstream);
        let renewed: RouteCredentials | undefined;
        try {
          renewed = await route.credentials.renewAfterUnauthorized(credentials);
        } catch (err) {
          logger.warn('token renewal after an upstream 401 failed; passing the 401 back', { reason: (err as Error).message });
        }
        // A throttled or failed renewal can settle with the very credentials just rejected:
        // replaying with them would only earn a second 401.
        if (renewed && renewed.generation !== credentials.generation) {
          upstream = await send(renewed);
          if (upstream.status === 401) metrics.upstreamUnauthorized();
        } else {
          upstream = held;
        }
      }
    }
    writeResponse(route, req, res, upstream, started);
  }

  function writeResponse(route: ProxyRoute, req: IncomingMessage, res: ServerResponse, upstream: UpstreamResponse, started: number): void {
    const seconds = (clock.now() - started) / 1000;
    try {
      res.writeHead(upstream.status, responseHeaders(upstream.headers));
    } catch (err) {
      // A header value Node refuses to send (e.g. a control character): answered as a 502.
      upstream.body.destroy();
      throw err;
    }
    upstream.body.pipeTo(res);
    // Recorded once the answer is on its way: off the latency path, and not twice if writeHead threw.
    metrics.responseStarted(route.name, req.method ?? 'GET', upstream.status, seconds);
  }
}

/** The path sent upstream: the route prefix removed, always starting with `/`. */
function upstreamPath(url: string, prefix: string): string {
  const rest = url.slice(prefix.length);
  if (rest === '') return '/';
  return rest.charCodeAt(0) === 63 /* ? */ ? `/${rest}` : rest;
}

function pickRoute(routes: ProxyRoute[], url: string): ProxyRoute {
  for (const route of routes) {
    if (route.prefix === '') return route;
    if (url.startsWith(route.prefix)) {
      const next = url.charCodeAt(route.prefix.length);
      if (Number.isNaN(next) || next === 47 /* / */ || next === 63 /* ? */) return route;
    }
  }
  return routes[routes.length - 1]!;
}

/** The client's headers minus hop-by-hop, nominated and route-owned ones, plus the route's own. */
function outgoingHeaders(req: IncomingMessage, route: ProxyRoute, credentials: RouteCredentials): Record<string, string | string[]> {
  const nominated = connectionNominated(req.headers.connection);
  const out: Record<string, string | string[]> = {};
  const source = req.headers;
  for (const name in source) {
    if (STRIPPED_REQUEST_HEADERS.has(name) || route.stripHeaders.has(name) || nominated?.has(name)) continue;
    const value = source[name];
    if (value !== undefined) out[name] = value;
  }
  if (route.stripCookies.size || credentials.prepared.cookie) {
    // A Cookie header the client nominated as hop-by-hop is dropped; the route's own still goes.
    const cookie = rewriteCookie(nominated?.has('cookie') ? undefined : source.cookie, route.stripCookies, credentials.prepared.cookie);
    if (cookie === undefined) delete out.cookie;
    else out.cookie = cookie;
  }
  for (const [name, value] of credentials.prepared.headers) out[name] = value;
  return out;
}

function responseHeaders(headers: UpstreamResponse['headers']): Record<string, string | string[]> {
  const nominated = connectionNominated(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || STRIPPED_RESPONSE_HEADERS.has(name) || nominated?.has(name)) continue;
    out[name] = value;
  }
  return out;
}

/**
 * Reads a 401 answer aside so it can still be passed back if no new token comes. 401 bodies are
 * small; one beyond the bound is replaced by a short ErrorMessage rather than truncated.
 */
async function hold(upstream: UpstreamResponse): Promise<UpstreamResponse> {
  let body = await upstream.body.readAll(MAX_HELD_401_BYTES);
  const headers: UpstreamResponse['headers'] = { ...upstream.headers };
  delete headers['transfer-encoding'];
  if (body === undefined) {
    body = Buffer.from(JSON.stringify({ message: 'the service rejected the token' }));
    headers['content-type'] = 'application/json; charset=utf-8';
    delete headers['content-encoding'];
  }
  headers['content-length'] = String(body.length);
  return { status: upstream.status, headers, body: bufferedBody(body) };
}
