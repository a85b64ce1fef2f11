import type { Registry } from '@prometheus-io/client';
import type { Logger } from './observability/logger.js';
import { ListenError } from './config/listen-error.js';
import type { Config } from './config/schema.js';
import { configWarnings } from './config/warnings.js';
import { rereadFileKeys } from './config/walk.js';
import type { LocalizationPart } from './localization/localization-part.js';
import { createAdminHandler } from './observability/admin.js';
import { liveness, readiness, stateOf, type SidecarStatus } from './observability/status.js';
import { createMetrics, createRegistry, type AnyListener, type Metrics } from './observability/metrics.js';
import { createListener, type Listener } from './proxy/listener.js';
import { groupId } from './proxy/local-socket.js';
import { createProxyHandler, type ProxyRoute } from './proxy/proxy-handler.js';
import { ReplayBudget } from './proxy/replay-body.js';
import { startServicePart, tokenClientOptions, transportOptions, type ServicePart } from './service/service-part.js';
import { systemClock, type Clock } from './shared/clock.js';
import { compileIpGuard } from './shared/ip-guard.js';
import { RunGroup } from './shared/run-group.js';
import type { SecretSet } from './shared/secrets.js';
import { gentokenUrl } from './token/token-client.js';
import type { TokenManager } from './token/token-manager.js';

export interface SidecarDeps {
  logger: Logger;
  secrets: SecretSet;
  clock?: Clock;
  /** The sidecar's own registry; a fresh one when absent. */
  registry?: Registry;
  /** Source of randomness for renewal jitter and backoff (tests pass a fixed one). */
  random?: () => number;
  /** The config file it runs with (`run --config`), named in hints such as the doctor command line. */
  configPath?: string;
  /** The package version, for `b2b_sidecar_build_info` and the start log. */
  version?: string;
  /** Where HTTPS_PROXY and NO_PROXY are read (tests pass their own); the process's environment by default. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Called once when a drain or stop begins, whoever started it (systemd's STOPPING=1). */
  onDrain?: () => void;
  /**
   * Loads the localization part's module (a dynamic import by default, so a sidecar without
   * `localization` never reads it). Tests pass their own to hold start-up at that step.
   */
  loadLocalizationPart?: () => Promise<typeof import('./localization/localization-part.js')>;
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
  /**
   * Re-reads credential files (SIGHUP) and switches to a token obtained with them. For SIGHUP
   * (`signalled`), one log line says what was re-read, changed or not.
   */
  reloadCredentials(signalled?: boolean): Promise<void>;
  readonly registry: Registry;
  /** Settles once the sidecar has stopped, whoever stopped it (signal, POST /shutdown, error). */
  readonly done: Promise<void>;
  /** The token manager, once started. */
  readonly tokens: TokenManager | undefined;
  /** The one status, from which every other view below (and /status, STATUS=, the status command) is rendered. */
  status(): SidecarStatus;
  /** Readiness as /readyz answers it. */
  health(): { ready: boolean; reason?: string; warnings?: string[] };
  /** Liveness as /healthz answers it: the token loop's. */
  live(): { live: boolean; reason?: string };
}

/**
 * The admin listener's own limits: small requests from Prometheus and probes. A connection that
 * has not sent its request head within 2 s is answered 408 and closed, and an idle kept-alive one
 * is closed 2 s after its last answer: idle connections cannot hold the listener for long.
 */
const ADMIN_LIMITS = { requestTimeoutMs: 30_000, headersTimeoutMs: 2_000, keepAliveTimeoutMs: 2_000, maxHeaderBytes: 16_384, maxConnections: 64 };

/**
 * The addresses the sidecar's own `healthcheck` and `wait` connect from (a container's
 * HEALTHCHECK, a postStart hook): not counted by admin.maxConnectionsPerSource, so eight idle
 * connections of another local process cannot make the liveness check fail (docs/security.md,
 * "The admin listener cannot be held by idle connections"). Exactly these, not 127.0.0.0/8: a
 * service mesh's traffic arrives from 127.0.0.6.
 */
const PROBE_SOURCES = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/**
 * Wires the parts: no I/O until `start()`. The service part (credentials, token, engine, route),
 * the optional localization part, the proxy listener and the admin listener each register their
 * stop in a run group as they start; `stop()` runs them in reverse order.
 */
export function createSidecar(config: Config, deps: SidecarDeps): Sidecar {
  const clock = deps.clock ?? systemClock;
  const { logger, secrets } = deps;
  const registry = deps.registry ?? createRegistry();
  const group = new RunGroup(logger);
  let service: ServicePart | undefined;
  let localization: LocalizationPart | undefined;
  let listener: Listener | undefined;
  let socketListener: Listener | undefined;
  let draining = false;
  let phase: 'idle' | 'starting' | 'started' = 'idle';
  /** Settles (never rejects) once start() has finished or given up. */
  let startup: Promise<unknown> | undefined;
  let stopped: Promise<void> | undefined;
  let drained: Promise<void> | undefined;
  let markDone!: () => void;
  const done = new Promise<void>((resolve) => (markDone = resolve));

  const listeners: SidecarStatus['listeners'] = {};
  const build = { version: deps.version ?? 'unknown', node: process.version };
  /**
   * The one status: every fact the sidecar reports about itself. /readyz, /healthz, /status,
   * systemd's STATUS= and the status command all render this value (observability/status.ts).
   */
  const status = (): SidecarStatus => {
    const token = service?.tokens.view();
    let verdict: { ready: boolean; reason?: string };
    const warnings: string[] = [];
    if (draining) verdict = { ready: false, reason: 'shutting down' };
    else if (!service || !token) verdict = { ready: false, reason: 'starting' };
    else {
      verdict = token.ready ? { ready: true } : { ready: false, reason: token.reason ?? 'not ready' };
      // A wrong token.attach is a warning, not unreadiness: a 401 may be one endpoint's own answer,
      // and taking the pod out of service would stop the requests that do work.
      warnings.push(...token.warnings);
      const stuck = service.credentials.stuckSeconds();
      if (stuck !== undefined) warnings.push(`a credential file re-read has been running for ${stuck} s (a hung file system?); the current credentials stay in use`);
    }
    // Liveness is the token loop's: it fails only when the loop is dead or stuck, never because the vendor is down.
    const live = token ? { live: token.live, ...(token.liveReason !== undefined ? { liveReason: token.liveReason } : {}) } : { live: true };
    return {
      state: stateOf(verdict, token), ...verdict, ...live, warnings, token, listeners: { ...listeners }, build, at: new Date(clock.wallNow()).toISOString(),
    };
  };
  const health = () => readiness(status());
  const live = () => liveness(service ? status() : { live: true });
  let drainAnnounced = false;
  const announceDrain = () => {
    if (drainAnnounced) return;
    drainAnnounced = true;
    deps.onDrain?.();
  };

  function start() {
    const run = startParts();
    startup ??= run.catch(() => undefined);
    return run;
  }

  async function startParts() {
    group.alive();
    if (phase !== 'idle') throw new Error('start() may be called only once');
    phase = 'starting';
    const { replayBufferTotalBytes, replayBodyLimitBytes, streamedUploadShare } = config.proxy;
    // Each source's part of the budget: the same share as of the pool, and room for one whole copy.
    const replayBudget = new ReplayBudget(replayBufferTotalBytes, Math.max(replayBodyLimitBytes, Math.floor(replayBufferTotalBytes * streamedUploadShare)));
    const metrics: Metrics = createMetrics(registry, () => service?.tokens.gauges() ?? { ageSeconds: 0, expiresInSeconds: 0, valid: false }, { replayHeldBytes: () => replayBudget.held, attachSuspect: () => service?.tokens.attachSuspect() ?? false }, { version: deps.version ?? 'unknown', node: process.version });
    const part = await startServicePart(config, { group, metrics, clock, logger, secrets, ...(deps.random ? { random: deps.random } : {}), ...(deps.configPath ? { configPath: deps.configPath } : {}), ...(deps.env ? { env: deps.env } : {}) });
    service = part;
    const routes: ProxyRoute[] = [part.route];
    const l10n = config.localization;
    if (l10n) {
      // Loaded only when configured: the localization schema and poller cost start-up time.
      const { startLocalizationPart } = await (deps.loadLocalizationPart ?? (() => import('./localization/localization-part.js')))();
      // A signal during the import (the first start of a process reads the module from disk):
      // give up before making the part.
      group.alive();
      localization = await group.started(
        startLocalizationPart(l10n, { engine: config.proxy.engine, engineOptions: transportOptions(config, { clock, logger }), serviceAttachments: part.attachments, registry, clock, logger, secrets, metrics, signal: group.signal, ...(deps.env ? { env: deps.env } : {}) }),
        (l) => l.stop(),
      );
      routes.push(localization.route);
    }

    const handler = createProxyHandler({
      routes, guard: compileIpGuard(config.guard.allow, config.guard.trustedProxies), metrics, logger, clock,
      replayBodyLimitBytes: config.proxy.replayBodyLimitBytes, replayBudget, logRequests: config.log.requests,
      minUploadBytesPerSecond: config.proxy.minUploadBytesPerSecond,
      streamedUploadsPerSource: Math.max(1, Math.floor(config.proxy.maxSockets * config.proxy.streamedUploadShare)),
    });
    const counted = (listener: AnyListener) => {
      metrics.listenerStarted(listener);
      return { onOpen: () => metrics.connectionOpened(listener), onClose: () => metrics.connectionClosed(listener) };
    };
    const now = () => clock.now();
    const proxyListener = createListener(handler, config.proxy, logger, {
      onRefused: (reason) => metrics.connectionRefused('proxy', reason), ...counted('proxy'),
      full: { listener: 'proxy', remedy: 'raise proxy.maxConnections if the clients are expected', now },
    });
    listener = proxyListener;
    const adminGuard = compileIpGuard(config.admin.allow);
    const adminAllows = (peer: string | undefined) => adminGuard.allows(adminGuard.clientAddress(peer, undefined));
    const admin = createListener(createAdminHandler({
      registry, health, status, logger, now: () => clock.now(),
      live,
      allow: adminAllows,
      ...(config.admin.allowShutdown ? { onShutdown: () => void drain() } : {}),
    }), { ...ADMIN_LIMITS, maxConnectionsPerSource: config.admin.maxConnectionsPerSource }, logger, {
      // Judged as the connection opens: idle connections from a refused source must not fill the
      // listener's 64 and take /healthz (and the liveness probe) down.
      admit: adminAllows,
      exemptFromPerSource: (peer) => peer !== undefined && PROBE_SOURCES.has(peer),
      onRefused: (reason) => metrics.connectionRefused('admin', reason),
      ...counted('admin'),
      full: { listener: 'admin', remedy: 'the admin listener takes 64 connections (fixed): find the clients holding them; admin.maxConnectionsPerSource bounds each source', now },
    });
    // Each registered before it binds: a stop() racing the bind still closes it.
    const adminPort = await group.started(listenOn(admin, 'admin', config.admin), () => admin.close(0));
    listeners.admin = `${config.admin.host}:${adminPort}`;
    const port = await group.started(listenOn(proxyListener, 'proxy', config.listen), () => proxyListener.close(0));
    listeners.proxy = `${config.listen.host}:${port}`;
    const socketPath = config.listen.socket;
    if (socketPath) {
      // The same handler on a unix socket: its file mode and group are the guard (local-socket.ts).
      const onSocket = createListener(handler, config.proxy, logger, {
        local: true, ...counted('socket'),
        onRefused: (reason) => metrics.connectionRefused('socket', reason),
        full: { listener: 'socket', remedy: 'raise proxy.maxConnections if the clients are expected (the socket has its own count)', now },
      });
      socketListener = onSocket;
      // Registered before it binds, like the TCP listeners: a failure after it bound (its mode or
      // group refused, the path taken meanwhile) must still close the listener, or the open
      // listener keeps a process that could not start alive. close() removes the socket file
      // only if this listener put it there, never a live one it refused to take.
      await group.started(onSocket, () => onSocket.close(0));
      const socketGroup = config.listen.socketGroup;
      await Promise.resolve()
        .then(() => onSocket.listenPath(socketPath, parseInt(config.listen.socketMode, 8), socketGroup ? groupId(socketGroup) : undefined))
        .catch((err: unknown) => { throw new ListenError('proxy', socketPath, undefined, err); });
      group.alive();
      listeners.socket = socketPath;
    }

    phase = 'started';
    part.tokens.start();
    part.credentials.watch(() => void reloadCredentials());
    logger.info('sidecar started', {
      version: deps.version ?? 'unknown', node: process.version,
      listen: `${config.listen.host}:${port}`, admin: `${config.admin.host}:${adminPort}`,
      ...(socketPath ? { socket: socketPath, socketMode: config.listen.socketMode, socketGuard: 'file permissions (guard.allow does not apply)' } : {}),
      service: new URL(config.service.baseUrl).origin, gentoken: gentokenUrl(tokenClientOptions(config, undefined)), engine: config.proxy.engine,
      localization: l10n ? new URL(l10n.baseUrl).origin : undefined,
      // Which forward proxy carries which upstream's connections, or why none does.
      egress: { service: part.egress.path, ...(localization ? { localization: localization.egress.path } : {}) },
      ...clientCertificates(part, localization),
    });
    for (const warning of configWarnings(config)) logger.warn(warning.message, warning.fields);
    return { port, adminPort };
  }

  async function reloadCredentials(signalled = false) {
    localization?.reload();
    if (!service) {
      if (signalled) logger.info('SIGHUP: nothing re-read yet (still starting)');
      return;
    }
    // Beside the credential re-read, not before it: a hung proxy or certificate file must not hold it back.
    const egressReload = service.egress.reload(); // never rejects: a refused file keeps the current values
    let credentials = 'unchanged';
    try {
      if (await service.credentials.reload()) {
        credentials = 'changed';
        logger.info('credentials changed; obtaining a token with the new ones');
        await service.tokens.rotate();
      }
    } catch (err) {
      credentials = 'kept (re-read failed)';
      logger.error('credential reload failed; keeping the current credentials', { reason: (err as Error).message });
    }
    await egressReload;
    if (signalled) {
      // Said every time, changed or not: an operator who sent the signal sees it arrived and what it covered.
      const files = rereadFileKeys(config);
      if (files.length) logger.info('SIGHUP: re-read the files', { files, credentials });
      else logger.info('SIGHUP: nothing to re-read (no file-based settings)');
    }
  }

  function drain() {
    announceDrain();
    drained ??= (async () => {
      // Nothing has been served yet, so nothing to drain; load balancers never saw it ready.
      if (phase !== 'started') return stop();
      draining = true;
      logger.info('draining', { delaySeconds: config.shutdown.delaySeconds, timeoutSeconds: config.shutdown.timeoutSeconds });
      if (config.shutdown.delaySeconds > 0) {
        await new Promise<void>((resolve) => clock.setTimeout(resolve, config.shutdown.delaySeconds * 1000));
      }
      await Promise.all([listener?.close(config.shutdown.timeoutSeconds * 1000), socketListener?.close(config.shutdown.timeoutSeconds * 1000)]);
      await stop();
    })();
    return drained;
  }

  function stop() {
    announceDrain();
    stopped ??= (async () => {
      draining = true;
      group.requestStop();
      await startup;
      await group.stopAll();
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
      return service?.tokens;
    },
    status,
    health,
    live,
  };
}

/** Binds a listener; a failure names the listener and its config key. */
function listenOn(listener: Listener, which: 'proxy' | 'admin', at: { host: string; port: number }): Promise<number> {
  return listener.listen(at.host, at.port).catch((err: unknown) => {
    throw new ListenError(which, at.host, at.port, err);
  });
}

/** The client certificates presented, for the start log (subject and expiry, never the key). */
function clientCertificates(service: ServicePart, localization: LocalizationPart | undefined): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const [route, handle] of [['service', service.egress], ['localization', localization?.egress]] as const) {
    const certificate = handle?.certificate();
    if (certificate) shown[`${route}ClientCertificate`] = { subject: certificate.subject, notAfter: certificate.notAfter.toISOString() };
  }
  return shown;
}
