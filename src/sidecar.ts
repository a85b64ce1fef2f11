import type { Registry } from '@prometheus-io/client';
import type { Logger } from './observability/logger.js';
import type { Config } from './config/schema.js';
import { configWarnings } from './config/warnings.js';
import { rereadFileKeys } from './config/walk.js';
import { liveness, readiness, type SidecarStatus } from './observability/status.js';
import { createMetrics, createRegistry, type Metrics } from './observability/metrics.js';
import { adminListenerPart } from './parts/admin-listener.js';
import { fairShares } from './parts/fair-shares.js';
import { localizationParts } from './parts/localization.js';
import type { Made, PartDeps } from './parts/made.js';
import { proxyHandlerPart } from './parts/proxy-handler.js';
import { proxyListenerPart } from './parts/proxy-listener.js';
import { servicePart } from './parts/service.js';
import { setReadiness, sidecarStatus } from './parts/sidecar-status.js';
import { setListenersPart } from './parts/set-listeners.js';
import { credentialSets } from './config/credential-sets.js';
import type { SetPart } from './service/service-part.js';
import { socketParts } from './parts/socket-listener.js';
import { startLogFields } from './parts/start-log.js';
import { tokenRenewalPart } from './parts/token-renewal.js';
import { warningsLogPart } from './parts/warnings-log.js';
import { systemClock, type Clock } from './shared/clock.js';
import { RunGroup } from './shared/run-group.js';
import type { SecretSet } from './shared/secrets.js';
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
 * Wires the parts: no I/O until `start()`. Start-up is one ordered list of parts (src/parts/, one
 * a file), run by the run group: the service part, the localization part (when configured), the
 * proxy handler, the admin listener, the proxy listener, the unix socket (when configured), the
 * credential sets' own listeners (when any set has `listen`), the token renewal and the warnings log. Each part's stop is registered as it has started;
 * `stop()` runs them in reverse order.
 */
export function createSidecar(config: Config, deps: SidecarDeps): Sidecar {
  const clock = deps.clock ?? systemClock;
  const { logger, secrets } = deps;
  const registry = deps.registry ?? createRegistry();
  const group = new RunGroup(logger);
  const made: Made = { ports: {}, listeners: {} };
  let draining = false;
  let phase: 'idle' | 'starting' | 'started' = 'idle';
  /** Settles (never rejects) once start() has finished or given up. */
  let startup: Promise<unknown> | undefined;
  let stopped: Promise<void> | undefined;
  let drained: Promise<void> | undefined;
  let markDone!: () => void;
  const done = new Promise<void>((resolve) => (markDone = resolve));

  const build = { version: deps.version ?? 'unknown', node: process.version };
  const credentialIds = credentialSets(config).map((s) => s.id);
  const status = (): SidecarStatus => sidecarStatus(made, { draining, build, wallNow: clock.wallNow(), credentialIds, readiness: config.readiness.credentials });
  const health = () => readiness(status());
  const healthOf = (id: string) => setReadiness(status(), id);
  const live = () => liveness(made.service ? status() : { live: true });
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
    // Every client connection the proxy's listeners take (the socket has its own count): the replay reserve has a room for each.
    const shares = fairShares(config.proxy, config.proxy.maxConnections * (config.listen.socket ? 2 : 1));
    const { replayBudget, uploadShare } = shares;
    // The token gauges render the one status, as /readyz and /status do.
    const metrics: Metrics = createMetrics(registry, {
      status, replayHeldBytes: () => replayBudget.held,
      shares: () => {
        const streams = uploadShare.totals();
        return { streamsActive: streams.active, streamsWaiting: streams.waiting, reservedHeldBytes: replayBudget.reservedHeld, limits: shares.limits };
      },
    }, build);
    const on: PartDeps = {
      config, group, metrics, registry, replayBudget, uploadShare, clock, logger, secrets,
      ...(deps.random ? { random: deps.random } : {}), ...(deps.configPath ? { configPath: deps.configPath } : {}), ...(deps.env ? { env: deps.env } : {}),
    };
    await group.run([
      servicePart(on, made),
      ...localizationParts(on, made, deps.loadLocalizationPart),
      proxyHandlerPart(on, made),
      // Admin before proxy before socket: probes answer while the rest binds.
      adminListenerPart(on, made, { status, health, healthOf, live, onShutdown: () => void drain() }),
      proxyListenerPart(on, made),
      ...socketParts(on, made),
      setListenersPart(on, made),
      tokenRenewalPart(made, (set) => void reloadSet(set)),
      warningsLogPart(on, status),
    ]);
    phase = 'started';
    logger.info('sidecar started', startLogFields(config, made, build));
    for (const warning of configWarnings(config)) logger.warn(warning.message, warning.fields);
    return { port: made.ports.proxy!, adminPort: made.ports.admin! };
  }

  async function reloadCredentials(signalled = false) {
    made.localization?.reload();
    const { service } = made;
    if (!service) {
      if (signalled) logger.info('SIGHUP: nothing re-read yet (still starting)');
      return;
    }
    // Beside the credential re-read, not before it: a hung proxy or certificate file must not hold it back.
    const egressReload = Promise.all(service.egresses.map((e) => e.reload())); // never rejects: a refused file keeps the current values
    // Each set re-reads its own files and rotates only its own token (docs/credential-sets.md).
    const outcomes = await Promise.all(service.sets.map((set) => reloadSet(set)));
    const several = service.sets.length > 1;
    // With several sets the line groups them by outcome (1,000 sets make no 1,000-field line).
    const credentials = several ? groupIds(service.sets.map((set, i) => [set.id, outcomes[i]!])) : outcomes[0]!;
    await egressReload;
    if (signalled) {
      // Unchanged credentials: the fix may be elsewhere (the vendor's side, a client certificate just
      // re-read): without a valid token or after a refusal, try now rather than at the schedule's next step.
      const retried = service.sets.map((set, i) => (outcomes[i] === 'unchanged' ? set.tokens.retryNow() : undefined));
      const gentoken = several
        ? groupIds(service.sets.flatMap((set, i) => (retried[i] === undefined ? [] : [[set.id, retried[i]!] as [string, string]])))
        : retried[0];
      // Said every time, changed or not: an operator who sent the signal sees it arrived and what it covered.
      const files = rereadFileKeys(config);
      if (files.length) logger.info('SIGHUP: re-read the files', { files, credentials, gentoken });
      else logger.info('SIGHUP: nothing to re-read (no file-based settings)', { gentoken });
    }
  }

  /** One set's files re-read; a change rotates that set's token only. Never rejects. */
  async function reloadSet(set: SetPart): Promise<'changed' | 'unchanged' | 'kept (re-read failed)'> {
    const about = service().sets.length > 1 ? { credential: set.id } : {};
    try {
      if (!(await set.credentials.reload())) return 'unchanged';
      logger.info('credentials changed; obtaining a token with the new ones', about);
      await set.tokens.rotate();
      return 'changed';
    } catch (err) {
      logger.error('credential reload failed; keeping the current credentials', { reason: (err as Error).message, ...about });
      return 'kept (re-read failed)';
    }
  }
  const service = () => made.service!;

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
      await Promise.all([
        made.proxy?.close(config.shutdown.timeoutSeconds * 1000), made.socket?.close(config.shutdown.timeoutSeconds * 1000),
        ...(made.setListeners ?? []).map((l) => l.close(config.shutdown.timeoutSeconds * 1000)),
      ]);
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
      return made.service?.tokens;
    },
    status,
    health,
    live,
  };
}

/** `[[id, outcome], ...]` → `{ outcome: [ids] }`, at most 20 ids an outcome (then `… and N more`). */
function groupIds(pairs: ReadonlyArray<readonly [string, string]>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [id, outcome] of pairs) (out[outcome] ??= []).push(id);
  for (const [outcome, ids] of Object.entries(out)) if (ids.length > 20) out[outcome] = [...ids.slice(0, 20), `… and ${ids.length - 20} more`];
  return out;
}
