import { createServer, type Server } from 'node:https';
import { SIMULATOR_TIMEOUTS } from './http-util.js';
import { setServerTimeouts } from '../shared/server-timeouts.js';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { generateTlsMaterial, type TlsMaterial } from './certs.js';
import { localizationSampleData, type WeblateShape } from './localization-data.js';

export interface LocalizationSimulatorOptions {
  /** When set, requests need `Authorization: Token <token>` (or Bearer), as with REQUIRE_LOGIN. */
  token?: string;
  /** Server certificate; generated (localhost, 127.0.0.1, ::1) when absent. */
  tls?: TlsMaterial;
  host?: string;
  port?: number;
  /**
   * Answer shape of the built-in data: `current` (Weblate 4.3+, the default: source language on
   * the component, null VCS fields of a read-only token) or `legacy` (Weblate ≤ 4.2 and the seed).
   */
  shape?: WeblateShape;
  /** Translations keyed `project/[category/]component/language`, built from the simulator's base URL. */
  data?: (baseUrl: string) => Map<string, Record<string, unknown>>;
}

export interface RecordedRequest { method: string; url: string; headers: IncomingMessage['headers'] }

export interface LocalizationSimulator {
  start(): Promise<{ port: number; url: string }>;
  /** Closes the listener and every open connection; idempotent. */
  stop(): Promise<void>;
  faults: {
    /** The next translation answer has `field` (dotted) removed, or set to `value` when given. */
    malformNext(field: string, value?: unknown): void;
    /** The next request gets 429 with this Retry-After (seconds, or an HTTP-date string). */
    rateLimitNext(retryAfter: number | string): void;
    /** The next request gets this status (e.g. 500, 503) in Weblate's error shape. */
    failNext(status: number): void;
    /** Error body shape: DRF's `{"detail"}` or Weblate ≥ 5.10's `{"type","errors"}`. */
    errorShape: 'detail' | 'errors';
  };
  /** Requests seen (the last 200), with their headers, so tests can assert what was sent. */
  stats: { requests: RecordedRequest[]; count: number };
}

const RATE_LIMIT = 5000;
const ERROR_CODES: Record<number, string> = {
  401: 'not_authenticated', 404: 'not_found', 405: 'method_not_allowed', 429: 'throttled', 500: 'error', 503: 'error',
};

/** A Weblate-style localization server over HTTPS serving the translation lookup (the lookup Weblate documents as GET /api/translations/…/). */
export function createLocalizationSimulator(options: LocalizationSimulatorOptions = {}): LocalizationSimulator {
  let server: Server | undefined;
  let data = new Map<string, Record<string, unknown>>();
  let remaining = RATE_LIMIT;
  let malform: { field: string; value?: unknown; set: boolean } | undefined;
  let rateLimit: number | string | undefined;
  let failStatus: number | undefined;
  const stats = { requests: [] as RecordedRequest[], count: 0 };
  const faults: LocalizationSimulator['faults'] = {
    malformNext: (field, ...value) => { malform = { field, value: value[0], set: value.length > 0 }; },
    rateLimitNext: (retryAfter) => { rateLimit = retryAfter; },
    failNext: (status) => { failStatus = status; },
    errorShape: 'errors',
  };

  function sendError(res: ServerResponse, status: number, detail: string, headers: Record<string, string> = {}): void {
    const body = faults.errorShape === 'detail'
      ? { detail }
      : { type: status >= 500 ? 'server_error' : 'client_error', errors: [{ code: ERROR_CODES[status] ?? 'error', detail, attr: null }] };
    send(res, status, JSON.stringify(body), 'application/json', headers);
  }

  function send(res: ServerResponse, status: number, body: string, type: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
    res.end(res.req.method === 'HEAD' ? undefined : body);
  }

  function handle(req: IncomingMessage, res: ServerResponse): void {
    stats.count++;
    stats.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: { ...req.headers } });
    if (stats.requests.length > 200) stats.requests.shift();
    remaining = Math.max(0, remaining - 1);
    res.setHeader('x-ratelimit-limit', String(RATE_LIMIT));
    res.setHeader('x-ratelimit-remaining', String(remaining));
    res.setHeader('x-ratelimit-reset', '3600');
    res.setHeader('vary', 'Accept, Authorization');

    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return sendError(res, 405, `Method "${req.method}" not allowed.`, { allow: 'GET, HEAD' });
    }
    if (options.token !== undefined) {
      const auth = req.headers.authorization;
      if (auth !== `Token ${options.token}` && auth !== `Bearer ${options.token}`) {
        return sendError(res, 401, auth ? 'Invalid token.' : 'Authentication credentials were not provided.', { 'www-authenticate': 'Token' });
      }
    }
    if (rateLimit !== undefined) {
      const retryAfter = String(rateLimit);
      rateLimit = undefined;
      return sendError(res, 429, `Request was throttled. Expected available in ${retryAfter} seconds.`, { 'retry-after': retryAfter });
    }
    if (failStatus !== undefined) {
      const status = failStatus;
      failStatus = undefined;
      return sendError(res, status, 'A server error occurred.');
    }
    const url = new URL(req.url ?? '/', 'https://simulator.invalid');
    const format = url.searchParams.get('format');
    // Like Django behind a WSGI server: the path is percent-decoded once before routing, so a
    // bare %2F is a `/` there; a category component comes as `docs%252Fguide` → `docs%2Fguide`.
    let path: string;
    try {
      path = decodeURIComponent(url.pathname);
    } catch {
      return sendError(res, 404, 'Not found.'); // malformed percent-encoding
    }
    if (/^\/api\/translations\/[^/]+\/[^/]+\/[^/]+$/.test(path)) {
      // Django's APPEND_SLASH: a 301 to the same path with the slash, as an absolute path.
      res.writeHead(301, { location: `${url.pathname}/${url.search}`, 'content-length': 0 });
      res.end();
      return;
    }
    const match = /^\/api\/translations\/([^/]+)\/([^/]+)\/([^/]+)\/$/.exec(path);
    const key = match ? [match[1], match[2]!.replace(/%2F/gi, '/'), match[3]].join('/') : undefined;
    const found = key === undefined ? undefined : data.get(key);
    if (!found || (format !== null && format !== 'json' && format !== 'api')) {
      return sendError(res, 404, 'No Translation matches the given query.');
    }
    const body: Record<string, unknown> = structuredClone(found);
    if (malform) {
      applyMalform(body, malform);
      malform = undefined;
    }
    const json = JSON.stringify(body, null, format === 'api' ? 4 : undefined);
    if (format === 'api') {
      // The browsable API: an HTML page around the same JSON.
      const html = `<!DOCTYPE html><html><head><title>Translation Instance – Weblate</title></head><body><pre>${escapeHtml(json)}</pre></body></html>`;
      return send(res, 200, html, 'text/html; charset=utf-8', { allow: 'GET, HEAD, OPTIONS' });
    }
    send(res, 200, json, 'application/json', { allow: 'GET, HEAD, OPTIONS' });
  }

  return {
    async start() {
      if (server) throw new Error('localization simulator already started');
      const tls = options.tls ?? (await generateTlsMaterial());
      const srv = createServer({ cert: tls.certPem, key: tls.keyPem }, handle);
      setServerTimeouts(srv, SIMULATOR_TIMEOUTS);
      server = srv;
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
      });
      const { port, address } = srv.address() as AddressInfo;
      const host = address === '0.0.0.0' || address === '::' ? 'localhost' : address.includes(':') ? `[${address}]` : address;
      const url = `https://${host}:${port}`;
      data = options.data ? options.data(url) : localizationSampleData(url, options.shape);
      return { port, url };
    },
    async stop() {
      const srv = server;
      server = undefined;
      if (!srv) return;
      await new Promise<void>((resolve) => {
        srv.close(() => resolve());
        srv.closeAllConnections();
      });
    },
    faults,
    stats,
  };
}

function applyMalform(body: Record<string, unknown>, m: { field: string; value?: unknown; set: boolean }): void {
  const path = m.field.split('.');
  const last = path.pop()!;
  let target: Record<string, unknown> = body;
  for (const p of path) target = target[p] as Record<string, unknown>;
  if (m.set) target[last] = m.value;
  else delete target[last];
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
