import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import type { UpstreamBody } from './upstream-body.js';

/** One request to the upstream, with final headers (credentials already attached). */
export interface UpstreamRequest {
  method: string;
  /** Origin-form path and query, relative to the engine's base URL. */
  path: string;
  headers: Record<string, string | string[]>;
  /** A buffered body (replayable), the client's stream (not replayable), or none. */
  body: Buffer | Readable | undefined;
  /** Fires when the client goes away; the engine must then release the upstream request. */
  signal: ClientGone;
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
  ca: string[] | undefined;
  maxSockets: number;
  /** Idle keep-alive sockets close after this; keep it below the upstream's own idle timeout. */
  keepAliveTimeoutMs: number;
  /** Deadline for response headers (→ 504). */
  headersTimeoutMs: number;
  /** Longest silence while the response body streams before the exchange is aborted. */
  bodyTimeoutMs: number;
}

/**
 * A one-shot abort signal as an EventEmitter (undici accepts one). An AbortController per
 * request costs an EventTarget, and aborting one builds a DOMException with a stack; both
 * showed up in the hot-path profile.
 */
export class ClientGone extends EventEmitter {
  aborted = false;

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.emit('abort');
  }
}

/** Joins the base URL's path and a request path without doubling or losing slashes. */
export function basePathOf(baseUrl: URL): string {
  return baseUrl.pathname.endsWith('/') ? baseUrl.pathname.slice(0, -1) : baseUrl.pathname;
}
