import express, { type NextFunction, type Request, type Response } from 'express';
import type { Registry } from 'prom-client';
import type winston from 'winston';

export interface AdminOptions {
  /** The sidecar's own registry, rendered at `/metrics`. */
  registry: Registry;
  /** Readiness: ready only while a valid token is held and the sidecar is not draining. */
  health: () => { ready: boolean; reason?: string };
  /** `admin.allow` decision for the direct peer address (the socket's, never a forwarded header). */
  allow: (peer: string | undefined) => boolean;
  /** When given, `POST /shutdown` starts the graceful drain (`admin.allowShutdown`); otherwise it is 404. */
  onShutdown?: () => void;
  logger: winston.Logger;
}

/**
 * The admin listener's app: `/healthz`, `/readyz`, `/metrics` and optionally `POST /shutdown`.
 * Kept off the proxy listener so scraping and probes never compete with, or expose, proxied
 * traffic. Every answer is JSON (or the Prometheus text format) and no error leaks a stack.
 */
export function createAdminApp({ registry, health, allow, onShutdown, logger }: AdminOptions): express.Express {
  const app = express();
  // No 'trust proxy': req.ip would then come from a forgeable header (PITFALLS 21).
  app.disable('x-powered-by');
  app.disable('etag');

  app.use((req: Request, res: Response, next: NextFunction) => {
    const peer = req.socket.remoteAddress;
    if (!allow(peer)) {
      logger.warn('admin request refused by admin.allow', { source: peer ?? 'unknown', method: req.method, path: req.path });
      res.status(403).json({ message: 'forbidden' });
      return;
    }
    // Probe and metric answers describe this instant; a cache must never replay them.
    res.set('Cache-Control', 'no-store');
    next();
  });

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  app.get('/readyz', (_req, res) => {
    const { ready, reason } = health();
    if (ready) res.json({ status: 'ready' });
    else res.status(503).json({ status: 'not ready', message: reason ?? 'not ready' });
  });

  app.get('/metrics', async (_req, res) => {
    // registry.metrics() is async (PITFALLS 26); a rejection reaches the error handler below.
    const body = await registry.metrics();
    res.set('Content-Type', registry.contentType).send(body);
  });

  if (onShutdown) {
    app.post('/shutdown', (req, res) => {
      logger.info('drain requested through POST /shutdown', { source: req.socket.remoteAddress });
      // Start the drain only once this answer is out: the drain may close this very listener.
      res.once('close', () => {
        Promise.resolve()
          .then(onShutdown)
          .catch((err: unknown) => logger.error('drain after POST /shutdown failed', { err }));
      });
      res.status(202).json({ message: 'draining' });
    });
  }

  app.use((_req, res) => {
    res.status(404).json({ message: 'not found' });
  });

  // Express's own handler would send err.message and the stack outside production (PITFALLS 16).
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const status = clientErrorStatus(err);
    if (status === undefined) logger.error('admin request failed', { err, method: req.method, path: req.path });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.status(status ?? 500).json({ message: status === undefined ? 'internal error' : 'bad request' });
  });

  return app;
}

/** A 4xx that express or the router attached (e.g. a malformed URL), else undefined. */
function clientErrorStatus(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' && status >= 400 && status < 500 ? status : undefined;
}
