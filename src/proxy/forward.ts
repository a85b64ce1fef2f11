/**
 * Forward: one admitted request to its route's engine and back. The credentials (the current
 * ones, or waiting for the first token), the outgoing headers and query with the route's
 * attachments, the engine call, one retry on a fresh connection when a reused one failed before
 * any answer, and one replay after an upstream 401 with the token the token manager renews.
 * The answer goes to `write` (respond.ts); a failure is the caller's to answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.js';
import type { ClientGone, UpstreamRequest, UpstreamResponse } from '../upstream/engine.js';
import { bufferedBody } from '../upstream/upstream-body.js';
import { retryReason } from '../upstream/upstream-retry.js';
import { rewriteCookie, rewriteQuery } from './attach.js';
import { connectionNominated, STRIPPED_REQUEST_HEADERS } from './hop-by-hop.js';
import type { ProxyMetrics, ProxyRoute } from './proxy-route.js';
import type { ReplayTee } from './body/replay-body.js';
import type { RequestBody } from './body/body-source.js';
import type { RouteCredentials } from './route-credentials.js';

export interface ForwarderOptions {
  metrics: Pick<ProxyMetrics, 'upstreamUnauthorized' | 'upstreamRetried'>;
  logger: Logger;
  /** Writes the upstream's answer to the client (`Responder.upstream`). */
  write(route: ProxyRoute, req: IncomingMessage, res: ServerResponse, upstream: UpstreamResponse, started: number): void;
}

/**
 * Sends an admitted request upstream with the route's current credentials and writes the answer;
 * settles when the answer is on its way, rejects when there is none to write (no token, the
 * service unreachable, a refused header).
 */
export type Forward = (
  route: ProxyRoute, req: IncomingMessage, res: ServerResponse, plan: RequestBody | undefined,
  content: Buffer | ReplayTee | undefined, signal: ClientGone, started: number, path: string,
) => Promise<void>;

/** A body that cannot be sent a second time. */
const NOT_REPLAYABLE = Symbol('not replayable');
/** Largest 401 body kept aside so it can still be passed back if the token renewal fails. */
const MAX_HELD_401_BYTES = 64 * 1024;

export function createForwarder(options: ForwarderOptions): Forward {
  const { metrics, logger, write } = options;

  return function forward(route, req, res, plan, content, signal, started, path) {
    const credentials = route.credentials.current();
    return credentials
      ? forwardWith(route, req, res, credentials, plan, content, signal, started, path)
      : route.credentials.acquire().then((c) => forwardWith(route, req, res, c, plan, content, signal, started, path));
  };

  /**
   * Sends the request upstream and writes the answer. An answer other than a 401 reaches the
   * client one promise hop after the engine's (this runs for every proxied request); a failed
   * attempt and a 401 take the slower paths.
   */
  function forwardWith(
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
      write(route, req, res, upstream, started);
    };
    const answered = (upstream: UpstreamResponse): void | Promise<void> => {
      if (upstream.status !== 401 || !route.credentials.renewAfterUnauthorized) {
        // Every answer feeds the rules that judge the token and token.attach (answer-rules.ts).
        route.credentials.answered?.(credentials, upstream.status, path, undefined, method);
        return deliver(upstream);
      }
      metrics.upstreamUnauthorized();
      return replayAfterUnauthorized(options, route, credentials, upstream, plan !== undefined && !plan.replayable, method, path, async (renewed) => {
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
}

/**
 * After an upstream 401: renew the token and send the request once more with it. The service did
 * not process a 401'd request, so replaying any method once is safe. `resend` gives undefined
 * when the body cannot be sent again (streamed, or its copy given up); the 401 is then passed back.
 */
async function replayAfterUnauthorized(
  { metrics, logger }: ForwarderOptions, route: ProxyRoute, credentials: RouteCredentials, rejected: UpstreamResponse, streamed: boolean, method: string, path: string,
  resend: (renewed: RouteCredentials) => Promise<UpstreamResponse | undefined>,
): Promise<UpstreamResponse> {
  const renew = route.credentials.renewAfterUnauthorized!;
  if (streamed) {
    // The body is gone, so no replay; but the token is still renewed for the next requests, and
    // the next 401 on this path with the new one says whether it helped (the path's own 401).
    renew(credentials, path, method).then((renewed) => {
      if (renewed && renewed.generation !== credentials.generation) route.credentials.unreplayed?.(renewed, path, method);
    }, () => undefined);
    return rejected;
  }
  const held = await hold(rejected);
  let renewed: RouteCredentials | undefined;
  try {
    renewed = await renew(credentials, path, method);
  } catch (err) {
    logger.warn('token renewal after an upstream 401 failed; passing the 401 back', { reason: (err as Error).message });
  }
  // A throttled or failed renewal can settle with the very credentials just rejected:
  // replaying with them would only earn a second 401.
  if (!renewed || renewed.generation === credentials.generation) return held;
  const replayed = await resend(renewed);
  if (!replayed) {
    route.credentials.unreplayed?.(renewed, path, method);
    return held;
  }
  if (replayed.status === 401) metrics.upstreamUnauthorized();
  route.credentials.answered?.(renewed, replayed.status, path, credentials, method);
  return replayed;
}

/** The client's headers minus hop-by-hop, nominated and route-owned ones, plus the route's own. */
export function outgoingHeaders(req: Pick<IncomingMessage, 'headers'>, route: Pick<ProxyRoute, 'stripHeaders' | 'stripCookies'>, credentials: RouteCredentials): Record<string, string | string[]> {
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
