import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from '@prometheus-io/client';
import type { Logger } from './logger.js';
import { sendJsonBody, sendText } from '../shared/send-json.js';
import type { SidecarStatus } from './status.js';

export interface AdminOptions {
  /** The sidecar's own registry, rendered at `/metrics`. */
  registry: Registry;
  /**
   * Readiness: ready only while a valid token is held and the sidecar is not draining. `warnings`
   * are conditions an operator should see that do not make the sidecar unready.
   */
  health: () => { ready: boolean; reason?: string; warnings?: readonly string[] };
  /**
   * `/readyz?credential=<id>`: one credential set's readiness; undefined for an id no set has (404).
   * Omitted: every id is unknown (404).
   */
  healthOf?: (id: string) => { ready: boolean; reason?: string; warnings?: readonly string[] } | undefined;
  /**
   * Liveness for `/healthz`: false only when the process should be restarted (the token loop is
   * dead or stuck). Omitted = always live.
   */
  live?: () => { live: boolean; reason?: string };
  /**
   * The one status, answered as JSON at `GET /status` (always 200: the status was read; its
   * `ready` says the verdict). Omitted = no `/status` route.
   */
  status?: () => SidecarStatus;
  /** `admin.allow` decision for the direct peer address (the socket's, never a forwarded header). */
  allow: (peer: string | undefined) => boolean;
  /** When given, `POST /shutdown` starts the graceful drain (`admin.allowShutdown`); otherwise it is 404. */
  onShutdown?: () => void;
  logger: Logger;
  /** Monotonic milliseconds, for the scrape cache; `performance.now` when absent. */
  now?: () => number;
}

/**
 * A rendering of /metrics serves every scrape for this long. Rendering shares the event loop with
 * the proxy: 30 concurrent scrapers cut proxied throughput from about 5,200 to 51 requests/s.
 */
export const SCRAPE_CACHE_MS = 1000;

type Route = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/**
 * The admin listener's handler: `/healthz`, `/readyz`, `/status`, `/metrics` and optionally
 * `POST /shutdown`. Kept off the proxy listener so scraping and probes never compete with, or
 * expose, proxied traffic. Every answer is JSON (or the Prometheus text format) and no error
 * leaks a stack (docs/traps.md T16).
 *
 * A plain `http` handler rather than an express app: four fixed routes need no router, and
 * express 5 bundled is 0.84 MB of code that cost ~60 ms of start-up (one core) and ~11 MB of
 * resident memory, against the start-up and idle-memory targets (bench/results/findings.md).
 */
export function createAdminHandler({ registry, health, healthOf, live, status, allow, onShutdown, logger, now = () => performance.now() }: AdminOptions): (req: IncomingMessage, res: ServerResponse) => void {
  let rendered: { at: number; body: Promise<string> } | undefined;
  /** One rendering at a time, reused for SCRAPE_CACHE_MS; a failed one is not kept. */
  const render = (): Promise<string> => {
    const at = now();
    if (rendered && at - rendered.at < SCRAPE_CACHE_MS) return rendered.body;
    const body = registry.metrics();
    const entry = { at, body };
    rendered = entry;
    body.catch(() => {
      if (rendered === entry) rendered = undefined;
    });
    return body;
  };
  const routes = new Map<string, Map<string, Route>>([
    ['/healthz', new Map([['GET', (_req, res) => {
      const state = live?.() ?? { live: true };
      if (state.live) sendJsonBody(res, 200, { status: 'ok' });
      else sendJsonBody(res, 503, { status: 'not live', message: state.reason ?? 'not live' });
    }]])],
    ['/readyz', new Map([['GET', (req, res) => {
      const asked = credentialParameter(req.url ?? '/');
      if (typeof asked === 'object') return sendJsonBody(res, 400, { message: asked.problem });
      const verdict = asked === undefined ? health() : healthOf?.(asked);
      if (!verdict) return sendJsonBody(res, 404, { message: `no credential set has the id "${asked}" (the ids are the credentials[].id of the config)` });
      const { ready, reason, warnings } = verdict;
      const extra = warnings?.length ? { warnings } : {};
      if (ready) sendJsonBody(res, 200, { status: 'ready', ...extra });
      else sendJsonBody(res, 503, { status: 'not ready', message: reason ?? 'not ready', ...extra });
    }]])],
    ['/metrics', new Map([['GET', async (_req, res) => {
      // registry.metrics() is async (docs/traps.md T26); a rejection becomes the generic 500 below.
      const body = await render();
      sendText(res, 200, registry.contentType, body);
    }]])],
  ]);
  if (status) routes.set('/status', new Map([['GET', (_req, res) => sendJsonBody(res, 200, status())]]));
  if (onShutdown) {
    routes.set('/shutdown', new Map([['POST', (req, res) => {
      logger.info('drain requested through POST /shutdown', { source: req.socket.remoteAddress });
      // Start the drain only once this answer is out: the drain may close this very listener.
      res.once('close', () => {
        Promise.resolve()
          .then(onShutdown)
          .catch((err: unknown) => logger.error('drain after POST /shutdown failed', { err }));
      });
      sendJsonBody(res, 202, { message: 'draining' });
    }]]));
  }
  for (const methods of routes.values()) if (methods.has('GET')) methods.set('HEAD', methods.get('GET')!);

  return function handleAdmin(req, res) {
    const peer = req.socket.remoteAddress;
    const path = routePath(req.url ?? '/');
    if (!allow(peer)) {
      logger.warn('admin request refused by admin.allow', { source: peer ?? 'unknown', method: req.method, path });
      return sendJsonBody(res, 403, { message: 'forbidden' });
    }
    const methods = routes.get(path);
    if (!methods) return sendJsonBody(res, 404, { message: 'not found' });
    const route = methods.get(req.method ?? 'GET');
    if (!route) {
      return sendJsonBody(res, 405, { message: `method ${req.method} not allowed` }, { allow: [...methods.keys()].join(', ') });
    }
    const failed = (err: unknown) => {
      logger.error('admin request failed', { err, method: req.method, path });
      if (res.headersSent) res.destroy();
      else sendJsonBody(res, 500, { message: 'internal error' });
    };
    try {
      const done = route(req, res);
      if (done) done.catch(failed);
    } catch (err) {
      failed(err);
    }
  };
}

/** A credential set id as the config allows it (config/credential-sets-schema.ts). */
const CREDENTIAL_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** `?credential=<id>` of /readyz: absent, an id, or why it cannot be one (never echoed unchecked). */
function credentialParameter(url: string): string | undefined | { problem: string } {
  const query = url.indexOf('?');
  if (query < 0) return undefined;
  const params = new URLSearchParams(url.slice(query + 1));
  const values = params.getAll('credential');
  if (values.length === 0) return undefined;
  if (values.length > 1) return { problem: 'give one credential parameter' };
  return CREDENTIAL_ID.test(values[0]!) ? values[0] : { problem: 'credential must be a credential set id (lower-case letters, digits, - and _)' };
}

/**
 * The path a route is looked up by: query dropped, absolute-form (`GET http://host/metrics`)
 * reduced to its path, case and one trailing slash ignored, as the express app matched them.
 */
function routePath(url: string): string {
  let path = url;
  if (!path.startsWith('/')) {
    try {
      path = new URL(path).pathname;
    } catch {
      return ''; // `*` or garbage: no route
    }
  }
  const query = path.indexOf('?');
  if (query >= 0) path = path.slice(0, query);
  path = path.toLowerCase();
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}
