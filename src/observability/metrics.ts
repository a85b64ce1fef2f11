/**
 * observability/: what operators see: the metrics (metric-definitions.ts declares every metric;
 * this file owns the registry and the typed hooks the engines call), the JSON logger with
 * redaction, the admin listener's handler.
 * May import: shared/ only.
 */
import type { Registry } from '@prometheus-io/client';
import {
  EGRESS_PROXY_FAILURES, LABEL_VALUES, SIDECAR_METRICS, TRANSLATION_METRICS, TRANSLATION_STATES,
  type AnyListener, type CaptureDropReason, type ConnectionRefusalReason, type EgressProxyFailure, type GentokenCause,
  type GentokenTrigger, type RefreshResult, type RetryReason, type RouteName, type Shares,
} from './metric-definitions.js';
import { registerMetrics } from './metric-registration.js';
import { Registry as RegistryClass, collectDefaultMetrics } from './prom-client-core.js';
import type { TokenStatus } from './status.js';

export {
  EGRESS_PROXY_FAILURES, GENTOKEN_CAUSES, GENTOKEN_TRIGGERS, LABEL_VALUES, TRANSLATION_STATES,
  type AnyListener, type CaptureDropReason, type ConnectionRefusalReason, type EgressProxyFailure, type GentokenCause,
  type GentokenTrigger, type ListenerName, type RefreshResult, type RetryReason, type RouteName,
} from './metric-definitions.js';

/** Typed handles for everything the sidecar records; label values cannot be chosen by clients. */
export interface Metrics {
  /** A credential set was made: its per-set counters start at 0 (`credential` label: its id). */
  credentialStarted(credential: string): void;
  tokenRefreshed(result: RefreshResult, seconds: number, credential?: string): void;
  /** A gentoken request failed, by cause. */
  tokenRequestFailed(cause: GentokenCause, credential?: string): void;
  /** A gentoken call had to wait for the budget or a Retry-After. */
  gentokenDeferred(trigger: GentokenTrigger, credential?: string): void;
  upstreamUnauthorized(): void;
  guardDenied(): void;
  requestStarted(): void;
  /** Called once per proxied request when response headers are known (hot path: no allocation after warm-up). */
  responseStarted(route: RouteName, method: string, code: number, seconds: number): void;
  requestEnded(): void;
  /** A request sent again on a fresh connection after a stale keep-alive connection failed. */
  upstreamRetried(reason: RetryReason): void;
  /** A request body's replay copy was given up: over the per-request limit or the shared budget. */
  replayCaptureDropped(reason: CaptureDropReason): void;
  /**
   * Called when the sidecar answers a proxied request itself (guard, target check, no token,
   * service unreachable or timed out, ...) rather than passing the service's answer through, so
   * alerts can tell the sidecar's own 502/503/504 from the service's.
   */
  localResponse(route: RouteName, code: number): void;
  /** A connection refused as it opened: a source outside admin.allow, over its per-source limit, or the listener full (the unix socket's only reason). */
  connectionRefused(listener: AnyListener, reason: ConnectionRefusalReason): void;
  /** A young, accepted token this process still held was rejected: another holder of the ApiKey? */
  tokenSuperseded(credential?: string): void;
  /** A fleet renewal claim (token/fleet-source.ts) and its result. */
  fleetClaim(credential: string, result: 'won' | 'lost' | 'error'): void;
  /** A fleet publish lost the compare-and-set. */
  fleetPublishConflict(credential: string): void;
  /** A fleet store operation failed. */
  fleetStoreError(credential: string, operation: string): void;
  /** A listener is up: its connection series start at 0. */
  listenerStarted(listener: AnyListener): void;
  /** A connection opened (refused ones too) on a listener, and closed. */
  connectionOpened(listener: AnyListener): void;
  connectionClosed(listener: AnyListener): void;
  /** The route's connections go through an egress proxy (its failure series start at 0). */
  egressProxyInUse(route: RouteName): void;
  /** A CONNECT tunnel through the route's egress proxy failed (the proxy, not the upstream). */
  egressProxyFailed(route: RouteName, reason: EgressProxyFailure): void;
  /** The route presents a client certificate; `notAfter` is read at each scrape (it changes on reload). */
  clientCertificate(route: RouteName, notAfter: () => Date | undefined): void;
}

/** What the scrape-time gauges read. */
export interface MetricSources {
  /**
   * The one status (sidecar.ts `status()`): the token gauges render its token part, the value
   * /readyz and /status render too, so they cannot disagree. Read once per scrape.
   */
  status(): { token: TokenStatus | undefined; credentials?: ReadonlyArray<{ id: string; token: TokenStatus | undefined }> };
  /** Bytes of request bodies held for replay right now. */
  replayHeldBytes(): number;
  /** The fair shares now (streams, the replay reserve) and their limits; none when absent. */
  shares?(): Shares;
}

/** No token, nothing held: what a registry for the docs or a test reads. */
const IDLE: MetricSources = { status: () => ({ token: undefined, credentials: [{ id: DEFAULT_CREDENTIAL, token: undefined }] }), replayHeldBytes: () => 0 };
/** The id of the object form's one set (config/credential-sets.ts: observability/ does not import config/). */
const DEFAULT_CREDENTIAL = 'default';
const NO_SHARES: Shares = { streamsActive: 0, streamsWaiting: 0, reservedHeldBytes: 0, limits: undefined };
/** The counters with a `credential` label whose series start at 0 per set. */
const PER_CREDENTIAL = ['tokenRequestFailures', 'gentokenDeferred', 'tokenRefresh', 'tokenSuperseded'] as const;
/** Anything else becomes OTHER, so a client inventing methods cannot create series (docs/traps.md T25). */
const METHODS = LABEL_VALUES.method;
const METHOD_INDEX = new Map<string, number>(METHODS.map((m, i) => [m, i]));
const OTHER_METHOD = METHODS.length - 1;
/**
 * The Prometheus client's default gauges whose names end in `_total`, which Prometheus reserves for
 * counters (`promtool check metrics` rejects them). The per-type gauges `nodejs_active_handles`,
 * `nodejs_active_requests` and `nodejs_active_resources` stay; `sum()` of one gives its total.
 */
export const MISNAMED_DEFAULT_GAUGES: readonly string[] = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** The one place a Prometheus registry is built: one per sidecar, never the client library's global one. */
export function createRegistry(): Registry {
  return new RegistryClass();
}

/**
 * Registers the Prometheus client's default process metrics and the sidecar's metrics
 * (metric-definitions.ts `SIDECAR_METRICS`) on `registry`, and returns the typed hooks over their
 * handles. Call once per registry; a second call throws instead of silently double-registering
 * (docs/traps.md T24).
 */
export function createMetrics(registry: Registry, sources: MetricSources = IDLE, build: { version: string; node: string } = { version: 'unknown', node: process.version }): Metrics {
  if (registry.getSingleMetric(SIDECAR_METRICS.tokenValid.name)) {
    throw new Error('createMetrics: this registry already holds the sidecar metrics; build one registry per sidecar');
  }
  collectDefaultMetrics({ register: registry });
  for (const name of MISNAMED_DEFAULT_GAUGES) registry.removeSingleMetric(name);
  const certificates = new Map<RouteName, () => Date | undefined>();
  const m = registerMetrics(registry, SIDECAR_METRICS, () => {
    const status = sources.status();
    return {
      token: status.token, credentials: status.credentials ?? [{ id: DEFAULT_CREDENTIAL, token: status.token }],
      replayHeldBytes: sources.replayHeldBytes(), shares: sources.shares?.() ?? NO_SHARES, build, certificates,
    };
  });
  const started = new Set<string>();
  const requests = m.requests;
  const egressRoutes = new Set<RouteName>();
  const openedBy = new Map<AnyListener, { opened: ReturnType<typeof m.connectionsOpened.labels>; open: ReturnType<typeof m.openConnections.labels> }>();
  const byListener = (listener: AnyListener) => {
    let handles = openedBy.get(listener);
    if (!handles) {
      handles = { opened: m.connectionsOpened.labels(listener), open: m.openConnections.labels(listener) };
      handles.opened.inc(0);
      openedBy.set(listener, handles);
    }
    return handles;
  };

  return {
    listenerStarted: (listener) => void byListener(listener),
    connectionOpened(listener) {
      const h = byListener(listener);
      h.opened.inc();
      h.open.inc();
    },
    connectionClosed: (listener) => byListener(listener).open.dec(),
    egressProxyInUse(route) {
      // Its failure series start at 0 once a route uses a proxy; a route without one has none.
      if (egressRoutes.has(route)) return;
      egressRoutes.add(route);
      for (const r of EGRESS_PROXY_FAILURES) m.egressProxyFailures.labels(route, r).inc(0);
    },
    egressProxyFailed: (route, reason) => m.egressProxyFailures.labels(route, reason).inc(),
    clientCertificate: (route, notAfter) => void certificates.set(route, notAfter),
    credentialStarted(credential) {
      if (started.has(credential)) return;
      started.add(credential);
      for (const key of PER_CREDENTIAL) {
        const def = SIDECAR_METRICS[key];
        for (const labels of def.perCredential) m[key].labels(...labels, credential).inc(0);
      }
    },
    tokenRefreshed(result, seconds, credential = DEFAULT_CREDENTIAL) {
      m.tokenRefresh.labels(result, credential).inc();
      m.tokenRefreshDuration.observe(duration(seconds));
    },
    tokenRequestFailed: (cause, credential = DEFAULT_CREDENTIAL) => m.tokenRequestFailures.labels(cause, credential).inc(),
    gentokenDeferred: (trigger, credential = DEFAULT_CREDENTIAL) => m.gentokenDeferred.labels(trigger, credential).inc(),
    upstreamUnauthorized: () => m.upstreamUnauthorized.inc(),
    guardDenied: () => m.guardDenied.inc(),
    requestStarted: () => m.inflight.inc(),
    requestEnded: () => m.inflight.dec(),
    upstreamRetried: (reason) => m.upstreamRetries.labels(reason).inc(),
    replayCaptureDropped: (reason) => m.replayCaptureDropped.labels(reason).inc(),
    connectionRefused: (listener, reason) => m.connectionsRefused.labels(listener, reason).inc(),
    tokenSuperseded: (credential = DEFAULT_CREDENTIAL) => m.tokenSuperseded.labels(credential).inc(),
    fleetClaim: (credential, result) => m.fleetClaims.labels(credential, result).inc(),
    fleetPublishConflict: (credential) => m.fleetPublishConflicts.labels(credential).inc(),
    fleetStoreError: (credential, operation) => m.fleetStoreErrors.labels(credential, operation).inc(),
    localResponse(route, code) {
      // Off the hot path (error answers only): a label lookup per call is fine.
      m.localResponses.labels(route === 'localization' ? 'localization' : 'service', String(statusLabel(code))).inc();
    },
    responseStarted(route, method, code, seconds) {
      const routeIndex = route === 'localization' ? 1 : 0;
      const methodIndex = METHOD_INDEX.get(method) ?? OTHER_METHOD;
      const status = statusLabel(code);
      const key = (routeIndex * METHODS.length + methodIndex) * 1000 + status;
      const series = requests.get(key)
        ?? requests.add(key, { route: routeIndex === 1 ? 'localization' : 'service', method: METHODS[methodIndex]!, code: String(status) });
      requests.observe(series, duration(seconds));
    },
  };
}

/** Every metric the sidecar can register, the translation gauges included, with idle sources (the golden exposition test reads it). */
export function registerSidecarMetrics(registry: Registry): void {
  createMetrics(registry).credentialStarted(DEFAULT_CREDENTIAL);
  createTranslationMetrics(registry);
}

/** The labels of a watched translation (from `localization.watch`, never from a request). */
export type TranslationLabels = { project: string; component: string; language: string };
/** One successful lookup: counts in {@link TRANSLATION_STATES} order, the last change in Unix seconds. */
export interface TranslationCounts {
  units: readonly number[];
  words: readonly number[];
  /** Undefined when the translation never changed: the series is then removed, not zeroed. */
  lastChangeSeconds: number | undefined;
}

/** Typed hooks of the localization poller (localization/translation-exporter.ts). */
export interface TranslationMetrics {
  /** A translation is watched: its error series exists at 0 from the start, so rate() sees the first error. */
  watched(labels: TranslationLabels): void;
  recorded(labels: TranslationLabels, counts: TranslationCounts): void;
  lookupFailed(labels: TranslationLabels): void;
  rateLimitRemaining(remaining: number): void;
}

/**
 * Registers the translation gauges (metric-definitions.ts `TRANSLATION_METRICS`) on `registry`;
 * only a sidecar with `localization.watch` calls it.
 */
export function createTranslationMetrics(registry: Registry): TranslationMetrics {
  const { units, words, lastChange, lookupErrors: errors, rateLimitRemaining: remaining } = registerMetrics(registry, TRANSLATION_METRICS);
  return {
    watched: (labels) => errors.inc(labels, 0),
    recorded(labels, counts) {
      TRANSLATION_STATES.units.forEach((state, i) => units.set({ ...labels, state }, counts.units[i]!));
      TRANSLATION_STATES.words.forEach((state, i) => words.set({ ...labels, state }, counts.words[i]!));
      if (counts.lastChangeSeconds === undefined) lastChange.remove(labels);
      else lastChange.set(labels, counts.lastChangeSeconds);
    },
    lookupFailed: (labels) => errors.inc(labels),
    rateLimitRemaining: (n) => remaining.set(n),
  };
}

/** The `code` label: the status, or 0 for anything outside 100–599 (bounded series, docs/traps.md T25). */
function statusLabel(code: number): number {
  return Number.isInteger(code) && code >= 100 && code <= 599 ? code : 0;
}

/** The Prometheus client throws on a non-finite observation; a bad clock reading must not crash a request. */
function duration(seconds: number): number {
  return Number.isFinite(seconds) && seconds > 0 ? seconds : 0;
}
