/**
 * proxy/: the request path on the listener: the listener and its protocol checks, this handler,
 * attachments and route credentials, target checks, the request body (received whole, or
 * streamed within a per-source share; paced) and its replay copy.
 * May import: shared/, observability/, upstream/, and token/ only through the token manager.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.js';
import { rewriteCookie, rewriteQuery } from './attach.js';
import type { Clock } from '../shared/clock.js';
import type { CredentialSource, RouteCredentials } from './route-credentials.js';
import { SidecarError } from '../shared/errors.js';
import { connectionNominated, STRIPPED_REQUEST_HEADERS, STRIPPED_RESPONSE_HEADERS } from './hop-by-hop.js';
import type { IpGuard } from '../shared/ip-guard.js';
import type { Metrics, RouteName } from '../observability/metrics.js';
import { ClientGone, type ProxyEngine, type UpstreamRequest, type UpstreamResponse } from '../upstream/engine.js';
import type { ReplayBudget, ReplayTee } from './replay-body.js';
import { hasBody, RequestBodies, type RequestBody } from './request-body.js';
import { UploadPaces } from './upload-pace.js';
import { UploadShare } from './upload-share.js';
import { isLocalSocket } from './local-socket.js';
import { loggedPath } from './logged-path.js';
import { checkRequestTarget } from './request-target.js';
import { answerForUpstreamError } from '../upstream/upstream-error.js';
import { sendJson } from '../shared/send-json.js';
import { bufferedBody } from '../upstream/upstream-body.js';
import { retryReason } from '../upstream/upstream-retry.js';

export type { RouteName } from '../observability/metrics.js';

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
  /** Maps a response's `Location` (e.g. an upstream redirect) back under this route. */
  rewriteLocation?(location: string): string;
}

/** The metric hooks the proxy calls: a part of the metrics module's contract, not a copy of it. */
export type ProxyMetrics = Pick<Metrics,
  'requestStarted' | 'responseStarted' | 'requestEnded' | 'guardDenied' | 'upstreamUnauthorized' |
  'upstreamRetried' | 'replayCaptureDropped' | 'localResponse'>;

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
   * Most request bodies one source streams upstream at once on a route (`proxy.streamedUploadShare`
   * of `proxy.maxSockets`); more wait, unread. Unbounded when absent.
   */
  streamedUploadsPerSource?: number;
}

/** A body that cannot be sent a second time. */
const NOT_REPLAYABLE = Symbol('not replayable');
/** Largest 401 body kept aside so it can still be passed back if the token renewal fails. */
const MAX_HELD_401_BYTES = 64 * 1024;
const GUARD_DECISION = Symbol('b2b-sidecar.guard');
type GuardedSocket = { [GUARD_DECISION]?: boolean };

/**
 * The per-request path: guard → target check → route → request body (whole, or its share) →
 * credentials → upstream → (one replay after a 401) → response. Plain `http` handler; express stays off this path
 * because it doubles the CPU per request.
 */
export function createProxyHandler(options: ProxyHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const { guard, metrics, logger, clock } = options;
  const replay = { limit: options.replayBodyLimitBytes, budget: options.replayBudget, onDrop: metrics.replayCaptureDropped };
  const paces = new UploadPaces(options.minUploadBytesPerSecond ?? 0, clock);
  const bodies = new RequestBodies(replay, paces, new UploadShare(options.streamedUploadsPerSource ?? Number.MAX_SAFE_INTEGER));
  const routes = [...options.routes].sort((a, b) => b.prefix.length - a.prefix.length);

  const allowed = (req: IncomingMessage): boolean => {
    // The unix-socket listener: its file mode is the guard (local-socket.ts).
    if (isLocalSocket(req.socket)) return true;
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
    // Read now: once undici has consumed the request as a body, `req.socket` is null (docs/traps.md T29).
    const source = req.socket.remoteAddress ?? (isLocalSocket(req.socket) ? 'unix' : undefined);
    metrics.requestStarted();
    const respond = (status: number, message: string, headers?: Record<string, string>) => {
      metrics.responseStarted(route.name, method, status, (clock.now() - started) / 1000);
      metrics.localResponse(route.name, status);
      sendJson(res, status, message, headers);
    };
    const gone = new ClientGone();
    let body: RequestBody | undefined;
    res.on('close', () => { // once per response (Node's _closed flag); `on` saves `once`'s wrapper
      // The client went away before the response was complete: release the upstream request.
      if (!res.writableFinished) gone.abort();
      // Whatever happened, the body's copy, pace and share end with the response.
      body?.abandon();
      metrics.requestEnded();
      if (options.logRequests) {
        logger.info('request', {
          method, path: loggedPath(url), route: route.name, status: res.headersSent ? res.statusCode : 499,
          durationMs: Math.round(clock.now() - started), source,
        });
      }
    });

    if (!allowed(req)) {
      metrics.guardDenied();
      logger.warn('request denied by the source guard', { source, forwardedFor: req.headers['x-forwarded-for'] });
      return respond(403, 'source address not allowed');
    }
    const admitted = admit(route, url, method, req.headers);
    if ('status' in admitted) return respond(admitted.status, admitted.message, admitted.headers);
    const { path } = admitted;
    if (!hasBody(req)) return dispatch(undefined);
    // Received whole first (small), or streamed within the source's share (large or chunked);
    // either way the credentials are the current ones at dispatch.
    body = bodies.open(req, `${route.name} ${source}`, () => {
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
      const credentials = route.credentials.current();
      const forwarded = credentials
        ? forward(route, req, res, credentials, body, content, gone, started, path)
        : route.credentials.acquire().then((c) => forward(route, req, res, c, body, content, gone, started, path));
      forwarded.then(
        // Answered: the copy is not needed any more, and the rest of a slow upload no longer
        // holds a service connection.
        () => body?.settle(),
        (err: unknown) => {
          // No token, service unreachable, a failed upload: the engine may never have read the
          // body. Reading the rest (and discarding it) lets the client finish sending and read the
          // answer; a paused request would wedge its keep-alive connection.
          body?.abandon();
          fail(err);
        },
      );
    }

    function fail(err: unknown) {
      if (gone.aborted || res.destroyed) return; // client gone: nobody to answer
      const answer = answerForUpstreamError(err);
      if (!(err instanceof SidecarError)) logger.warn('upstream request failed', { route: route.name, status: answer.status, reason: answer.message, code: (err as { code?: string }).code });
      if (res.headersSent) res.destroy();
      else respond(answer.status, answer.message, answer.status === 503 ? { 'retry-after': '1' } : undefined);
    }
  };

  /**
   * Sends the request upstream and writes the answer. An answer other than a 401 reaches the
   * client one promise hop after the engine's (this runs for every proxied request); a failed
   * attempt and a 401 take the slower paths.
   */
  function forward(
    route: ProxyRoute, req: IncomingMessage, res: ServerResponse, credentials: RouteCredentials,
    plan: RequestBody | undefined, content: Buffer | ReplayTee | undefined, signal: ClientGone, started: number, path: string,
  ): Promise<void> {
    const method = req.method ?? 'GET';
    let body: UpstreamRequest['body'] = content;
    const send = (c: RouteCredentials, fresh: boolean) => route.engine.send({
      method,
      path: route.stripQuery.size || c.prepared.query ? rewriteQuery(path, route.stripQuery, c.prepared.query) : path,
      headers: outgoingHeaders(req, route, c),
      body,
      signal,
      fresh,
    });
    /** The whole body for a second attempt, or NOT_REPLAYABLE (streamed, or its copy given up). */
    const bodyAgain = async (): Promise<Buffer | undefined | typeof NOT_REPLAYABLE> => {
      if (plan === undefined) return undefined;
      return (await plan.again()) ?? NOT_REPLAYABLE;
    };
    let retried = false;
    /** After a failed attempt: once more on a fresh connection when a stale keep-alive one failed before any answer (once per client request). */
    const retry = async (c: RouteCredentials, err: unknown): Promise<UpstreamResponse> => {
      const reason = retryReason(err, method);
      if (reason === undefined || retried || signal.aborted) throw err;
      retried = true;
      const again = await bodyAgain();
      if (again === NOT_REPLAYABLE) throw err;
      body = again;
      metrics.upstreamRetried(reason);
      logger.debug('retrying on a fresh connection: a reused one failed before any answer', { route: route.name, method, reason });
      return send(c, true);
    };
    const deliver = (upstream: UpstreamResponse): void => {
      // The copy is only for a second attempt before an answer: not needed past this point.
      plan?.settle();
      writeResponse(route, req, res, upstream, started);
    };
    const answered = (upstream: UpstreamResponse): void | Promise<void> => {
      if (upstream.status !== 401 || !route.credentials.renewAfterUnauthorized) {
        // Every answer feeds the rules that judge the token and token.attach (answer-rules.ts).
        route.credentials.answered?.(credentials, upstream.status, path);
        return deliver(upstream);
      }
      metrics.upstreamUnauthorized();
      return replayAfterUnauthorized(route, credentials, upstream, plan !== undefined && !plan.replayable, path, async (renewed) => {
        const again = await bodyAgain();
        if (again === NOT_REPLAYABLE) return undefined;
        body = again;
        return send(renewed, false).catch((err: unknown) => retry(renewed, err));
      }).then(deliver);
    };
    let first: Promise<UpstreamResponse>;
    try {
      first = send(credentials, false);
    } catch (err) {
      // A synchronous throw (building the headers, an engine that throws) fails like a rejection:
      // answered, and the body released, by the caller.
      first = Promise.reject(err);
    }
    return first.then(answered, (err: unknown) => retry(credentials, err).then(answered));
  }

  /**
   * After an upstream 401: renew the token and send the request once more with it. The service did
   * not process a 401'd request, so replaying any method once is safe. `resend` gives undefined
   * when the body cannot be sent again (streamed, or its copy given up); the 401 is then passed back.
   */
  async function replayAfterUnauthorized(
    route: ProxyRoute, credentials: RouteCredentials, rejected: UpstreamResponse, streamed: boolean, path: string,
    resend: (renewed: RouteCredentials) => Promise<UpstreamResponse | undefined>,
  ): Promise<UpstreamResponse> {
    const renew = route.credentials.renewAfterUnauthorized!;
    if (streamed) {
      // The body is gone, so no replay; but the token is still renewed for the next requests.
      renew(credentials, path).catch(() => undefined);
      return rejected;
    }
    const held = await hold(rejected);
    let renewed: RouteCredentials | undefined;
    try {
      renewed = await renew(credentials, path);
    } catch (err) {
      logger.warn('token renewal after an upstream 401 failed; passing the 401 back', { reason: (err as Error).message });
    }
    // A throttled or failed renewal can settle with the very credentials just rejected:
    // replaying with them would only earn a second 401.
    if (!renewed || renewed.generation === credentials.generation) return held;
    const replayed = await resend(renewed);
    if (!replayed) return held;
    if (replayed.status === 401) metrics.upstreamUnauthorized();
    route.credentials.answered?.(renewed, replayed.status, path, credentials);
    return replayed;
  }

  function writeResponse(route: ProxyRoute, req: IncomingMessage, res: ServerResponse, upstream: UpstreamResponse, started: number): void {
    const seconds = (clock.now() - started) / 1000;
    try {
      res.writeHead(upstream.status, responseHeaders(upstream.headers, route.rewriteLocation, route.stripQuery));
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

/** A refusal by the sidecar itself, before anything is sent upstream. */
interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/** Checks a request's target and method for its route: the path to send upstream, or why not. */
/** Headers some frameworks (Spring's HiddenHttpMethodFilter variants, ASP.NET, Rails) read as the real method. */
const METHOD_OVERRIDES = ['x-http-method-override', 'x-http-method', 'x-method-override'] as const;

function admit(route: ProxyRoute, url: string, method: string, headers: IncomingMessage['headers']): { path: string } | Refusal {
  const badTarget = checkRequestTarget(url);
  if (badTarget) return { status: 400, message: badTarget };
  if (route.methods && !route.methods.has(method)) {
    return { status: 405, message: `method ${method} not allowed on this route`, headers: { allow: [...route.methods].join(', ') } };
  }
  // An upstream that reflects TRACE would hand the attached token and ApiKey back to the client.
  // (TRACK never gets here: Node's parser answers unknown methods with 400.)
  // 501: refused for every resource (a 405 would owe an Allow header listing the others).
  if (method === 'TRACE' || overridesToTrace(headers)) return { status: 501, message: 'TRACE is not supported: it would reflect the credentials the sidecar attaches' };
  const path = upstreamPath(url, route.prefix);
  if (path !== url) {
    // Removing the prefix can expose a new start: `/l10n//evil.example/x` becomes `//evil.example/x`.
    const badPath = checkRequestTarget(path);
    if (badPath) return { status: 400, message: badPath };
  }
  return { path };
}

/** True when a method-override header asks for TRACE or TRACK (a service honouring it would reflect the credentials). */
function overridesToTrace(headers: IncomingMessage['headers']): boolean {
  for (const name of METHOD_OVERRIDES) {
    const value = headers[name];
    if (typeof value === 'string' && /^\s*tra(ce|ck)\s*$/i.test(value)) return true;
  }
  return false;
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
    // A Cookie header the client nominated as hop-by-hop, or one the route drops whole, is not
    // kept; the route's own cookies still go.
    const dropped = nominated?.has('cookie') || route.stripHeaders.has('cookie');
    const cookie = rewriteCookie(dropped ? undefined : source.cookie, route.stripCookies, credentials.prepared.cookie);
    if (cookie === undefined) delete out.cookie;
    else out.cookie = cookie;
  }
  for (const [name, value] of credentials.prepared.headers) out[name] = value;
  return out;
}

function responseHeaders(headers: UpstreamResponse['headers'], rewriteLocation: ((location: string) => string) | undefined, stripQuery: ReadonlySet<string>): Record<string, string | string[]> {
  const nominated = connectionNominated(headers.connection);
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || STRIPPED_RESPONSE_HEADERS.has(name) || nominated?.has(name)) continue;
    out[name] = value;
  }
  if (rewriteLocation && typeof out.location === 'string') out.location = rewriteLocation(out.location);
  // A query attachment echoed back (a trailing-slash redirect keeps the query) would hand the
  // token to the client: the route's own parameter names leave Location and Content-Location.
  if (stripQuery.size > 0) {
    for (const name of URL_ECHOING_HEADERS) {
      const value = out[name];
      if (typeof value === 'string' && value.includes('?')) out[name] = withoutParameters(value, stripQuery);
    }
  }
  return out;
}

/** Response headers that may carry the request URL back. */
const URL_ECHOING_HEADERS = ['location', 'content-location'] as const;

/** `url` with the query parameters named in `names` removed; its fragment kept. */
function withoutParameters(url: string, names: ReadonlySet<string>): string {
  const hash = url.indexOf('#');
  const fragment = hash === -1 ? '' : url.slice(hash);
  return rewriteQuery(hash === -1 ? url : url.slice(0, hash), names, '') + fragment;
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
