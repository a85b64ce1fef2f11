/**
 * upstream/: the transport to one upstream origin: the engine contract (this file), the undici
 * and http-proxy engines, their deadlines, the error → status table, the stale-connection retry
 * marks and the keep-alive learner. May import: shared/, observability/.
 *
 * Deadlines: a deadline chosen per request (a path deadline, `pathDeadlines`) must reach every
 * timer that bounds the answer, or the shortest one still cuts it. On undici those are the
 * engine's own header deadline (deadline-queue.ts, from dispatch) and BOTH of undici's timers,
 * `headersTimeout` (from the request written) and `bodyTimeout` (silence in the response body),
 * which the pool holds at the route's values and a dispatch overrides per request; on http-proxy,
 * the header timer and the socket timeout of the response (http-proxy-engine.ts).
 */
import type { Readable } from 'node:stream';
import type { Logger } from '../observability/logger.js';
import type { Clock } from '../shared/clock.js';
import type { PathDeadline } from '../shared/routes.js';
import type { TrustedCas } from '../shared/tls.js';
import type { Egress } from './egress.js';
import type { UpstreamBody } from './upstream-body.js';

/** One request to the upstream, with final headers (credentials already attached). */
export interface UpstreamRequest {
  method: string;
  /** Origin-form path and query, relative to the engine's base URL. */
  path: string;
  headers: Record<string, string | string[]>;
  /**
   * A complete body (received before dispatch, or a replay's copy), a stream still arriving from
   * the client, or none. Both come from the proxy's one request-body source (proxy/body/request-body.ts).
   */
  body: Buffer | StreamedBody | undefined;
  /** Fires when the client goes away; the engine must then release the upstream request. */
  signal: ClientGone;
  /**
   * Send on a new connection, not a pooled one: the retry after a reused connection failed
   * (see upstream-retry.ts).
   */
  fresh?: boolean;
}

/**
 * A request body the engine reads as it arrives, paced and bounded by the proxy. The engine sets
 * `onProgress` before reading: it runs whenever client bytes are handed on and once at the end,
 * so the engine's header deadline can count from the last of them (a slow upload is not the
 * service's delay; the proxy's minimum upload rate bounds the client).
 */
export interface StreamedBody extends Readable {
  onProgress: (() => void) | undefined;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Must be piped, read or destroyed by the caller. */
  body: UpstreamBody;
}

/**
 * The transport to one upstream origin over a keep-alive TLS pool. Engines never follow
 * redirects, verify certificates against system roots plus the configured CA, and reject
 * with an error whose `code` `answerForUpstreamError` understands.
 */
export interface ProxyEngine {
  send(request: UpstreamRequest): Promise<UpstreamResponse>;
  close(): Promise<void>;
}

export interface EngineOptions {
  /** Base URL; the request path is appended to its path. */
  baseUrl: URL;
  /** Trusted CAs (system roots + extra) or undefined for Node's defaults. */
  ca: TrustedCas | undefined;
  /** A forward proxy or client certificate on the way (upstream/egress.ts); absent = direct with `ca`. */
  egress?: Egress | undefined;
  maxSockets: number;
  /** Idle keep-alive sockets close after this; keep it below the upstream's own idle timeout. */
  keepAliveTimeoutMs: number;
  /** Deadline for response headers (→ 504). */
  headersTimeoutMs: number;
  /**
   * Deadlines per path prefix (shared/routes.ts, compiled longest first), matched against
   * `UpstreamRequest.path`: a match replaces `headersTimeoutMs` and raises `bodyTimeoutMs` to it.
   */
  pathDeadlines?: readonly PathDeadline[] | undefined;
  /** Longest silence while the response body streams before the exchange is aborted. */
  bodyTimeoutMs: number;
  /** For connection idle ages (the keep-alive learner); the system clock when absent. */
  clock?: Clock;
  /** Where a learned keep-alive timeout is reported. */
  logger?: Logger;
}

/**
 * A one-shot abort signal. Not an AbortController (an EventTarget per request, and aborting one
 * builds a DOMException with a stack) nor an EventEmitter (its constructor showed up in the
 * per-request profile): a request has at most one upstream exchange listening at a time.
 */
export class ClientGone {
  aborted = false;
  #listeners: Array<() => void> = [];

  /** `listener` runs once, on abort; it is not called if the signal already fired. */
  onAbort(listener: () => void): void {
    this.#listeners.push(listener);
  }

  offAbort(listener: () => void): void {
    const i = this.#listeners.indexOf(listener);
    if (i >= 0) this.#listeners.splice(i, 1);
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}

/** Joins the base URL's path and a request path without doubling or losing slashes. */
export function basePathOf(baseUrl: URL): string {
  return baseUrl.pathname.endsWith('/') ? baseUrl.pathname.slice(0, -1) : baseUrl.pathname;
}
