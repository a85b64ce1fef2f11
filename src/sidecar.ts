import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import type { Logger } from 'winston';
import { createAdminHandler } from './observability/admin.js';
import { compileAttachments } from './proxy/attach.js';
import { systemClock, type Clock } from './shared/clock.js';
import type { Config } from './config/schema.js';
import { tokenCredentials } from './proxy/route-credentials.js';
import { createCredentialStore, type CredentialStore } from './token/credential-store.js';
import { StoppedDuringStartError } from './shared/errors.js';
import { configWarnings } from './config/warnings.js';
import { compileIpGuard } from './shared/ip-guard.js';
import { ListenError } from './config/listen-error.js';
import type { LocalizationPart } from './localization/localization-part.js';
import { createMetrics, createRegistry, type Metrics } from './observability/metrics.js';
import { createProxyEngine } from './upstream/create-engine.js';
import { createProxyHandler, type ProxyRoute } from './proxy/proxy-handler.js';
import { createListener, type Listener } from './proxy/listener.js';
import { ReplayBudget } from './proxy/replay-body.js';
import type { SecretSet } from './shared/secrets.js';
import { loadTrustedCas } from './shared/tls.js';
import { createTokenClient, gentokenUrl, type TokenClient } from './token/token-client.js';
import { TokenManager } from './token/token-manager.js';

export interface SidecarDeps {
  logger: Logger;
  secrets: SecretSet;
  clock?: Clock;
  /** The sidecar's own registry; a fresh one when absent. */
  registry?: Registry;
  /** Source of randomness for renewal jitter and backoff (tests pass a fixed one). */
  random?: () => number;
}

export interface Sidecar {
  /**
   * Starts every part and binds the listeners; resolves with the bound ports (port 0 works).
   * Rejects with {@link StoppedDuringStartError} when stopped (or drained) before it finished.
   */
  start(): Promise<{ port: number; adminPort: number }>;
  /**
   * Graceful shutdown: readiness turns 503 at once, the listener keeps accepting for
   * `shutdown.delaySeconds`, then in-flight requests get `shutdown.timeoutSeconds`; then stop().
   * Before start-up has finished there is nothing to drain: it is stop().
   */
  drain(): Promise<void>;
  /**
   * Stops everything at once, in reverse order of start; idempotent and safe before start.
   * During start-up it makes start() give up and waits for it, so no part outlives it.
   */
  stop(): Promise<void>;
  /** Re-reads credential files (SIGHUP) and switches to a token obtained with them. */
  reloadCredentials(): Promise<void>;
  readonly registry: Registry;
  /** Settles once the sidecar has stopped, whoever stopped it (signal, POST /shutdown, error). */
  readonly done: Promise<void>;
  /** The token manager, once started. */
  readonly tokens: TokenManager | undefined;
}

const B2B_ROUTE_HEADERS = ['authorization'];

/**
 * Wires the parts: no I/O until `start()`. Each part has a start and a stop; `stop()` runs the
 * stops in reverse order, like a run group.
 */
export function createSidecar(config: Config, deps: SidecarDeps): Sidecar {
  const clock = deps.clock ?? systemClock;
  const { logger, secrets } = deps;
  const registry = deps.registry ?? createRegistry();
  let tokens: TokenManager | undefined;
  let draining = false;
  let phase: 'idle' | 'starting' | 'started' = 'idle';
  /** Settles (never rejects) once start() has finished or given up. */
  let startup: Promise<unknown> | undefined;
  let stopRequested = false;
  const stops: Array<() => Promise<void> | void> = [];
  let stopped: Promise<void> | undefined;
  let drained: Promise<void> | undefined;
  let listener: Listener | undefined;
  let credentials: CredentialStore | undefined;
  let localization: LocalizationPart | undefined;
  let markDone!: () => void;
  const done = new Promise<void>((resolve) => (markDone = resolve));

  const health = () => {
    if (draining) return { ready: false, reason: 'shutting down' };
    return tokens ? tokens.status() : { ready: false, reason: 'starting' };
  };

  function start() {
    const run = startParts();
    startup ??= run.catch(() => undefined);
    return run;
  }

  /**
   * A signal can arrive while start-up awaits (run.ts listens before starting): every await is
   * followed by `alive()`, after the stop of whatever it created was registered, so a stop()
   * unwinds start-up instead of being overtaken by it.
   */
  function alive(): void {
    if (stopRequested) throw new StoppedDuringStartError();
  }

  async function startParts() {
    alive();
    if (phase !== 'idle') throw new Error('start() may be called only once');
    phase = 'starting';
    const replayBudget = new ReplayBudget(config.proxy.replayBufferTotalBytes);
    const metrics: Metrics = createMetrics(registry, () => tokens?.gauges() ?? { ageSeconds: 0, expiresInSeconds: 0, valid: false }, { replayHeldBytes: () => replayBudget.held });
    const serviceCa = loadTrustedCas(config.service.caFile);
    credentials = await createCredentialStore(config.credentials, { logger, secrets });
    stops.push(() => credentials?.close());
    alive();
    const client: TokenClient = createTokenClient({ baseUrl: config.service.baseUrl, ca: serviceCa, timeoutMs: config.service.tokenTimeoutMs });
    stops.push(() => client.close());
    tokens = new TokenManager({
      client, credentials, clock, logger, secrets, random: deps.random,
      onRefresh: (result, seconds) => metrics.tokenRefreshed(result, seconds),
      options: { ...config.token, tokenTimeoutMs: config.service.tokenTimeoutMs },
    });
    const manager = tokens;
    stops.push(() => manager.stop());

    const attachments = compileAttachments(config.token.attach);
    const headersTimeoutMs = config.proxy.timeoutMs ?? config.service.timeoutMs;
    const engineOptions = {
      maxSockets: config.proxy.maxSockets, keepAliveTimeoutMs: config.proxy.keepAliveTimeoutMs,
      headersTimeoutMs, bodyTimeoutMs: config.proxy.idleTimeoutMs, clock, logger,
    };
    const serviceEngine = await createProxyEngine(config.proxy.engine, { ...engineOptions, baseUrl: new URL(config.service.baseUrl), ca: serviceCa });
    stops.push(() => serviceEngine.close());
    alive();
    const routes: ProxyRoute[] = [{
      name: 'service', prefix: '', engine: serviceEngine,
      credentials: tokenCredentials(manager, attachments),
      stripHeaders: new Set([...attachments.headerNames, ...B2B_ROUTE_HEADERS]),
      stripQuery: attachments.queryNames, stripCookies: attachments.cookieNames,
    }];
    const l10n = config.localization;
    if (l10n) {
      // Loaded only when configured: the localization schema and poller cost start-up time.
      const { startLocalizationPart } = await import('./localization/localization-part.js');
      alive();
      const part = await startLocalizationPart(l10n, { engine: config.proxy.engine, engineOptions, serviceAttachments: attachments, registry, clock, logger, secrets });
      localization = part;
      stops.push(() => part.stop());
      alive();
      routes.push(part.route);
    }

    const handler = createProxyHandler({
      routes, guard: compileIpGuard(config.guard.allow, config.guard.trustedProxies), metrics, logger, clock,
      replayBodyLimitBytes: config.proxy.replayBodyLimitBytes, replayBudget, logRequests: config.log.requests,
    });
    listener = createListener(handler, config.proxy, logger);
    const adminGuard = compileIpGuard(config.admin.allow);
    const admin = createServer(createAdminHandler({
      registry, health, logger,
      allow: (peer) => adminGuard.allows(adminGuard.clientAddress(peer, undefined)),
      ...(config.admin.allowShutdown ? { onShutdown: () => void drain() } : {}),
    }));
    admin.headersTimeout = 10_000;
    admin.requestTimeout = 30_000;
    // Registered before listening: a stop() racing the bind still closes the server.
    stops.push(() => closeServer(admin));
    const adminPort = await listen(admin, config.admin.host, config.admin.port).catch((err: unknown) => {
      throw new ListenError('admin', config.admin.host, config.admin.port, err);
    });
    alive();
    const proxyListener = listener;
    stops.push(() => proxyListener.close(0));
    const port = await listener.listen(config.listen.host, config.listen.port).catch((err: unknown) => {
      throw new ListenError('proxy', config.listen.host, config.listen.port, err);
    });
    alive();

    phase = 'started';
    manager.start();
    credentials.watch(() => void reloadCredentials());
    logger.info('sidecar started', {
      listen: `${config.listen.host}:${port}`, admin: `${config.admin.host}:${adminPort}`,
      service: new URL(config.service.baseUrl).origin, gentoken: gentokenUrl(config.service.baseUrl), engine: config.proxy.engine,
      localization: l10n ? new URL(l10n.baseUrl).origin : undefined,
    });
    for (const warning of configWarnings(config)) logger.warn(warning.message, warning.fields);
    return { port, adminPort };
  }

  async function reloadCredentials() {
    localization?.reload();
    if (!credentials || !tokens) return;
    try {
      if (await credentials.reload()) {
        logger.info('credentials changed; obtaining a token with the new ones');
        await tokens.rotate();
      }
    } catch (err) {
      logger.error('credential reload failed; keeping the current credentials', { reason: (err as Error).message });
    }
  }

  function drain() {
    drained ??= (async () => {
      // Nothing has been served yet, so nothing to drain; load balancers never saw it ready.
      if (phase !== 'started') return stop();
      draining = true;
      logger.info('draining', { delaySeconds: config.shutdown.delaySeconds, timeoutSeconds: config.shutdown.timeoutSeconds });
      if (config.shutdown.delaySeconds > 0) {
        await new Promise<void>((resolve) => clock.setTimeout(resolve, config.shutdown.delaySeconds * 1000));
      }
      await listener?.close(config.shutdown.timeoutSeconds * 1000);
      await stop();
    })();
    return drained;
  }

  function stop() {
    stopped ??= (async () => {
      draining = true;
      stopRequested = true;
      await startup;
      for (const fn of stops.reverse()) {
        try {
          await fn();
        } catch (err) {
          logger.warn('error while stopping', { reason: (err as Error).message });
        }
      }
      logger.info('sidecar stopped');
      markDone();
    })();
    return stopped;
  }

  return {
    start,
    drain,
    stop,
    reloadCredentials,
    registry,
    done,
    get tokens() {
      return tokens;
    },
  };
}

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
