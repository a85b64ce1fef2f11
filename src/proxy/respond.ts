/**
 * Respond: everything the request path writes back to the client. The upstream's answer (headers
 * filtered, `Location` mapped back under the route and cleared of the route's own query
 * parameters, the body piped straight through), the sidecar's own answers (a refusal, or an
 * upstream failure mapped to its status by `upstream/upstream-error.ts`), and the hooks that see
 * every request end: the response metrics and the access log.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../shared/clock.js';
import { SidecarError } from '../shared/errors.js';
import { sendJson } from '../shared/send-json.js';
import type { UpstreamResponse } from '../upstream/engine.js';
import { answerForUpstreamError } from '../upstream/upstream-error.js';
import { rewriteQuery } from './attach.js';
import { DIAGNOSTIC_HEADER, writeDiagnosticAnswer } from './diagnostic-answer.js';
import { connectionNominated, STRIPPED_RESPONSE_HEADERS } from './hop-by-hop.js';
import { loggedPath } from './logged-path.js';
import type { ProxyMetrics, ProxyRoute, RouteName } from './proxy-route.js';

export interface ResponderOptions {
  metrics: Pick<ProxyMetrics, 'responseStarted' | 'localResponse' | 'requestEnded'>;
  logger: Logger;
  clock: Clock;
  logRequests: boolean;
  /**
   * Scrubs every secret the sidecar holds, and every piece of one, from an answer relayed to a
   * diagnostic probe (diagnostic-answer.ts); without it such a probe gets the answer as is.
   */
  diagnosticRedact?: (text: string) => string;
}

/** Made once per handler; its methods take the request's facts, so a request allocates nothing here. */
export interface Responder {
  /** An answer of the sidecar's own (`{"message": ...}`), counted as a local response. */
  local(res: ServerResponse, route: RouteName, method: string, started: number, status: number, message: string, headers?: Record<string, string>): void;
  /** Writes the upstream's answer; throws (the body released) when Node refuses a header. */
  upstream(route: ProxyRoute, req: IncomingMessage, res: ServerResponse, upstream: UpstreamResponse, started: number): void;
  /** After a failed exchange: the error's status to the client, or the connection cut when the answer had begun. */
  failed(res: ServerResponse, route: RouteName, method: string, started: number, err: unknown): void;
  /** The response closed (finished or not): the in-flight gauge and the access log line. */
  ended(res: ServerResponse, route: RouteName, method: string, url: string, started: number, source: string | undefined): void;
}

export function createResponder(options: ResponderOptions): Responder {
  const { metrics, logger, clock, logRequests, diagnosticRedact } = options;
  const responder: Responder = {
    local(res, route, method, started, status, message, headers) {
      metrics.responseStarted(route, method, status, (clock.now() - started) / 1000);
      metrics.localResponse(route, status);
      sendJson(res, status, message, headers);
    },
    upstream(route, req, res, upstream, started) {
      const seconds = (clock.now() - started) / 1000;
      if (diagnosticRedact && req.headers[DIAGNOSTIC_HEADER] !== undefined) {
        const headers = responseHeaders(upstream.headers, route.rewriteLocation, route.stripQuery);
        writeDiagnosticAnswer(res, upstream, headers, diagnosticRedact).catch(() => res.destroy());
        metrics.responseStarted(route.name, req.method ?? 'GET', upstream.status, seconds);
        return;
      }
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
    },
    failed(res, route, method, started, err) {
      if (res.destroyed) return; // client gone: nobody to answer
      const answer = answerForUpstreamError(err, route);
      if (!(err instanceof SidecarError)) logger.warn('upstream request failed', { route, status: answer.status, reason: answer.message, code: (err as { code?: string }).code });
      if (res.headersSent) res.destroy();
      else responder.local(res, route, method, started, answer.status, answer.message, answer.status === 503 ? { 'retry-after': '1' } : undefined);
    },
    ended(res, route, method, url, started, source) {
      metrics.requestEnded();
      if (logRequests) {
        logger.info('request', {
          method, path: loggedPath(url), route, status: res.headersSent ? res.statusCode : 499,
          durationMs: Math.round(clock.now() - started), source,
        });
      }
    },
  };
  return responder;
}

/**
 * The upstream's response headers as the client gets them: hop-by-hop and nominated ones removed,
 * `Location` mapped back under the route, the route's own query parameters removed from the
 * headers that may echo the request URL.
 */
export function responseHeaders(headers: UpstreamResponse['headers'], rewriteLocation: ((location: string) => string) | undefined, stripQuery: ReadonlySet<string>): Record<string, string | string[]> {
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
