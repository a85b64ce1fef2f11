/**
 * observability/: what operators see: the metrics (this file owns the registry, the metric names
 * and their label values), the JSON logger with redaction, the admin listener's handler.
 * May import: shared/ only.
 */
import type { Registry } from '@prometheus-io/client';
import { Counter, Gauge, Histogram, Registry as RegistryClass, collectDefaultMetrics } from './prom-client-core.js';
import { RequestSeries } from './request-series.js';

/** Why a request was sent again on a fresh connection (`upstream_retries_total{reason}`, see upstream/upstream-retry.ts). */
export type RetryReason = 'reset' | 'broken_pipe' | 'closed';
/** Why a request body's replay copy was given up (`replay_capture_dropped_total{reason}`, see proxy/replay-body.ts). */
export type CaptureDropReason = 'request_limit' | 'global_limit' | 'source_limit';

/** Outcome of one gentoken request: 401 (credentials rejected) is told apart from other failures. */
export type RefreshResult = 'success' | 'unauthorized' | 'error';
/** The listeners that refuse connections as they open (`connections_refused_total{listener}`). */
export type ListenerName = 'proxy' | 'admin';
/** Every listener (`connections_opened_total{listener}`): the proxy on TCP, on its unix socket, the admin listener. */
export type AnyListener = ListenerName | 'socket';
/** Why a connection was refused as it opened (see proxy/listener.ts). */
export type ConnectionRefusalReason = 'not_allowed' | 'per_source_limit' | 'max_connections';
/** Configured route names; the only values the `route` label can take (never a raw path). */
export type RouteName = 'service' | 'localization';

/** Why a tunnel through the egress proxy failed (`egress_proxy_failures_total{reason}`, see upstream/connect-tunnel.ts). */
export type EgressProxyFailure = 'unreachable' | 'auth' | 'refused' | 'closed' | 'timeout';
export const EGRESS_PROXY_FAILURES: readonly EgressProxyFailure[] = ['unreachable', 'auth', 'refused', 'closed', 'timeout'];

/** Why a gentoken request failed (`token_request_failures_total{cause}`); a fixed set. */
export type GentokenCause =
  'unauthorized' | 'refused' | 'tls' | 'dns' | 'connection_refused' | 'timeout' | 'server_error' | 'rate_limited' | 'invalid_response' | 'http' | 'egress_proxy' | 'unreachable';
/** What asked for a gentoken call that the budget or a Retry-After held back (`gentoken_deferred_total{trigger}`). */
export type GentokenTrigger = 'start' | 'renewal' | 'retry' | 'upstream_401' | 'rotation';

/** Token state read at scrape time, so the gauges are always current. */
export interface TokenGauges {
  ageSeconds: number;
  expiresInSeconds: number;
  valid: boolean;
  /** Wall-clock Unix seconds when the current token expires; 0 when none. */
  expiryTimestampSeconds?: number;
  /** Wall-clock Unix seconds of the next gentoken attempt (now while one is in flight); 0 when none is scheduled. */
  nextRefreshTimestampSeconds?: number;
}

/** Typed handles for everything the sidecar records; label values cannot be chosen by clients. */
export interface Metrics {
  tokenRefreshed(result: RefreshResult, seconds: number): void;
  /** A gentoken request failed, by cause. */
  tokenRequestFailed(cause: GentokenCause): void;
  /** A gentoken call had to wait for the budget or a Retry-After. */
  gentokenDeferred(trigger: GentokenTrigger): void;
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
  tokenSuperseded(): void;
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

/** State read at scrape time besides the token's. */
export interface ScrapeGauges {
  /** Bytes of request bodies held for replay right now. */
  replayHeldBytes(): number;
  /** True while freshly obtained tokens keep being rejected (token.attach is suspect). */
  attachSuspect?(): boolean;
}

const PREFIX = 'b2b_sidecar_';
const REFRESH_RESULTS: readonly RefreshResult[] = ['success', 'unauthorized', 'error'];
/** Every `cause` label value of `token_request_failures_total`. */
export const GENTOKEN_CAUSES: readonly GentokenCause[] = [
  'unauthorized', 'refused', 'tls', 'dns', 'connection_refused', 'timeout', 'server_error', 'rate_limited', 'invalid_response', 'http', 'egress_proxy', 'unreachable',
];
/** Every `trigger` label value of `gentoken_deferred_total`. */
export const GENTOKEN_TRIGGERS: readonly GentokenTrigger[] = ['start', 'renewal', 'retry', 'upstream_401', 'rotation'];
const RETRY_REASONS: readonly RetryReason[] = ['reset', 'broken_pipe', 'closed'];
const DROP_REASONS: readonly CaptureDropReason[] = ['request_limit', 'global_limit', 'source_limit'];
const ROUTES: readonly RouteName[] = ['service', 'localization'];
const LISTENERS: readonly ListenerName[] = ['proxy', 'admin'];
const REFUSALS: readonly ConnectionRefusalReason[] = ['not_allowed', 'per_source_limit', 'max_connections'];
/**
 * The values the `route` and `method` labels can take, for the metrics table (docs/metrics.md)
 * (observability/metrics-table.ts); the recording below normalises every request to one of them.
 */
export const LABEL_VALUES: { readonly route: readonly RouteName[]; readonly method: readonly string[] } = {
  route: ROUTES,
  method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'],
};
/** The sidecar's own failure answers that B2BSidecarLocalErrors watches. */
const LOCAL_5XX = [502, 503, 504] as const;
/** Anything else becomes OTHER, so a client inventing methods cannot create series (docs/traps.md T25). */
const METHODS = LABEL_VALUES.method;
const METHOD_INDEX = new Map<string, number>(METHODS.map((m, i) => [m, i]));
const OTHER_METHOD = METHODS.length - 1;
const REQUEST_LABELS = ['route', 'method', 'code'] as const;
/** From a cached loopback answer (1 ms) to the longest upstream deadline worth telling apart (30 s). */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const REFRESH_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
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
 * Registers the sidecar's metrics (their names are a contract: alerts and dashboards in deploy/ use them) and the Prometheus client's default process
 * metrics on `registry`. Call once per registry; a second call throws instead of silently
 * double-registering (docs/traps.md T24).
 */
export function createMetrics(registry: Registry, tokenGauges: () => TokenGauges, scrape: ScrapeGauges = { replayHeldBytes: () => 0 }, build: { version: string; node: string } = { version: 'unknown', node: process.version }): Metrics {
  if (registry.getSingleMetric(`${PREFIX}token_valid`)) {
    throw new Error('createMetrics: this registry already holds the sidecar metrics; build one registry per sidecar');
  }
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: `${PREFIX}build_info`, help: 'Always 1; the labels say which sidecar version runs on which Node.js.',
    labelNames: ['version', 'node'] as const, registers,
  }).labels(build.version, build.node).set(1);
  for (const name of MISNAMED_DEFAULT_GAUGES) registry.removeSingleMetric(name);

  new Gauge({
    name: `${PREFIX}token_age_seconds`, help: 'Seconds since the current token was obtained (computed at scrape time).', registers,
    collect() { this.set(tokenGauges().ageSeconds); },
  });
  new Gauge({
    name: `${PREFIX}token_expires_in_seconds`, help: 'Seconds until the current token expires; 0 when none.', registers,
    collect() { this.set(tokenGauges().expiresInSeconds); },
  });
  new Gauge({
    name: `${PREFIX}token_valid`, help: '1 while a valid token is held, else 0.', registers,
    collect() { this.set(tokenGauges().valid ? 1 : 0); },
  });

  new Gauge({
    name: `${PREFIX}token_expiry_timestamp_seconds`, help: 'Wall-clock time (Unix seconds) when the current token expires; 0 when none.', registers,
    collect() { this.set(tokenGauges().expiryTimestampSeconds ?? 0); },
  });
  new Gauge({
    name: `${PREFIX}token_next_refresh_timestamp_seconds`, help: 'Wall-clock time (Unix seconds) of the next gentoken attempt (now while one is in flight); 0 when none is scheduled.', registers,
    collect() { this.set(tokenGauges().nextRefreshTimestampSeconds ?? 0); },
  });
  const failures = new Counter({
    name: `${PREFIX}token_request_failures_total`, help: 'Failed gentoken requests by cause (unauthorized = 401, refused = 403, rate_limited = 429 or 503 with Retry-After, tls, dns, connection_refused, timeout, server_error, invalid_response, http, egress_proxy = the forward proxy failed, unreachable).',
    labelNames: ['cause'] as const, registers,
  });
  for (const cause of GENTOKEN_CAUSES) failures.labels(cause).inc(0);
  const deferred = new Counter({
    name: `${PREFIX}gentoken_deferred_total`, help: 'Gentoken calls held back by token.maxGentokenPerMinute or a Retry-After, by what asked for them.',
    labelNames: ['trigger'] as const, registers,
  });
  for (const trigger of GENTOKEN_TRIGGERS) deferred.labels(trigger).inc(0);

  const refreshTotal = new Counter({
    name: `${PREFIX}token_refresh_total`, help: 'Token requests by result (success, unauthorized = gentoken 401, error).',
    labelNames: ['result'] as const, registers,
  });
  // Pre-initialised so the first failure is an increase from 0 that rate()/increase() can see.
  for (const result of REFRESH_RESULTS) refreshTotal.labels(result).inc(0);
  const refreshDuration = new Histogram({
    name: `${PREFIX}token_refresh_duration_seconds`, help: 'Latency of gentoken requests, success or not.',
    buckets: REFRESH_BUCKETS, registers,
  });
  const upstreamUnauthorized = new Counter({
    name: `${PREFIX}upstream_unauthorized_total`, help: '401 answers from the service on proxied requests.', registers,
  });
  // Recorded on every proxied request: plain numbers, read by the registry at scrape time.
  const requests = new RequestSeries(REQUEST_BUCKETS);
  requests.registerCounter(registry, {
    name: `${PREFIX}requests_total`, help: 'Proxied requests by route, method and status code.', labelNames: REQUEST_LABELS,
  });
  requests.registerHistogram(registry, {
    name: `${PREFIX}request_duration_seconds`, help: 'Time to response headers of proxied requests.', labelNames: REQUEST_LABELS,
  });
  const guardDenied = new Counter({
    name: `${PREFIX}guard_denied_total`, help: 'Requests refused by the source guard.', registers,
  });
  const inflight = new Gauge({
    name: `${PREFIX}inflight_requests`, help: 'Proxied requests in progress.', registers,
  });
  const localResponses = new Counter({
    name: `${PREFIX}local_responses_total`,
    help: 'Proxied requests the sidecar answered itself rather than passing the service\'s answer through, by route and status code; also counted in b2b_sidecar_requests_total.',
    labelNames: ['route', 'code'] as const, registers,
  });
  // Pre-initialised so the first 502/503/504 is an increase from 0 that rate()/increase() can see.
  for (const route of ROUTES) for (const code of LOCAL_5XX) localResponses.labels(route, String(code)).inc(0);

  const retries = new Counter({
    name: `${PREFIX}upstream_retries_total`, help: 'Requests sent again on a fresh connection after a reused keep-alive connection to the service failed before any answer, by failure.',
    labelNames: ['reason'] as const, registers,
  });
  for (const reason of RETRY_REASONS) retries.labels(reason).inc(0);
  const replayDropped = new Counter({
    name: `${PREFIX}replay_capture_dropped_total`, help: 'Request bodies whose copy for a replay was given up: larger than proxy.replayBodyLimitBytes (request_limit), proxy.replayBufferTotalBytes full (global_limit), or the source\'s share of it (proxy.streamedUploadShare) full (source_limit).',
    labelNames: ['reason'] as const, registers,
  });
  for (const reason of DROP_REASONS) replayDropped.labels(reason).inc(0);
  const refused = new Counter({
    name: `${PREFIX}connections_refused_total`, help: 'Connections closed as they opened, before any request: a source outside admin.allow (not_allowed), over maxConnectionsPerSource (per_source_limit), or the listener full (max_connections: proxy.maxConnections, 64 on admin; the socket listener has only this reason), by listener.',
    labelNames: ['listener', 'reason'] as const, registers,
  });
  for (const listener of LISTENERS) for (const reason of REFUSALS) refused.labels(listener, reason).inc(0);
  refused.labels('socket', 'max_connections').inc(0);
  new Gauge({
    name: `${PREFIX}attach_suspect`, help: '1 while no request succeeds with the token as token.attach presents it (fresh tokens get 401 on several paths, or only refusals such as 400, 403, 404 or a redirect on several paths; run doctor --discover-attach), else 0.', registers,
    collect() { this.set(scrape.attachSuspect?.() ? 1 : 0); },
  });
  const superseded = new Counter({
    name: `${PREFIX}token_superseded_total`, help: 'Tokens this process still held that the service rejected long before expiry after accepting them, where the renewal helped: most likely another process obtains tokens with the same ApiKey.', registers,
  });
  new Gauge({
    name: `${PREFIX}replay_buffer_bytes`, help: 'Bytes of request bodies held for a replay across all requests in flight (at most proxy.replayBufferTotalBytes).', registers,
    collect() { this.set(scrape.replayHeldBytes()); },
  });

  const egressFailures = new Counter({
    name: `${PREFIX}egress_proxy_failures_total`, help: 'CONNECT tunnels through the egress proxy (service.proxy, localization.proxy or HTTPS_PROXY) that failed, by route and reason (unreachable, auth = 407, refused = any other non-2xx, closed, timeout).',
    labelNames: ['route', 'reason'] as const, registers,
  });
  const egressRoutes = new Set<RouteName>();
  const certificates = new Map<RouteName, () => Date | undefined>();
  new Gauge({
    name: `${PREFIX}client_certificate_expiry_timestamp_seconds`, help: 'When the client certificate a route presents (service.certFile, localization.certFile) expires, in Unix seconds; absent for a route without one.',
    labelNames: ['route'] as const, registers,
    collect() {
      this.reset();
      for (const [route, notAfter] of certificates) {
        const at = notAfter();
        if (at) this.labels(route).set(Math.floor(at.getTime() / 1000));
      }
    },
  });

  const opened = new Counter({
    name: `${PREFIX}connections_opened_total`, help: 'Connections opened to each listener (proxy = TCP, socket = listen.socket, admin), refused ones included.',
    labelNames: ['listener'] as const, registers,
  });
  const open = new Gauge({
    name: `${PREFIX}open_connections`, help: 'Connections open on each listener now (proxy = TCP, socket = listen.socket, admin).',
    labelNames: ['listener'] as const, registers,
  });
  const openedBy = new Map<AnyListener, { opened: ReturnType<typeof opened.labels>; open: ReturnType<typeof open.labels> }>();
  const byListener = (listener: AnyListener) => {
    let handles = openedBy.get(listener);
    if (!handles) {
      handles = { opened: opened.labels(listener), open: open.labels(listener) };
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
      // Pre-initialised so the first failure is an increase from 0; a route without a proxy has no series.
      if (egressRoutes.has(route)) return;
      egressRoutes.add(route);
      for (const r of EGRESS_PROXY_FAILURES) egressFailures.labels(route, r).inc(0);
    },
    egressProxyFailed: (route, reason) => egressFailures.labels(route, reason).inc(),
    clientCertificate: (route, notAfter) => void certificates.set(route, notAfter),
    tokenRefreshed(result, seconds) {
      refreshTotal.labels(result).inc();
      refreshDuration.observe(duration(seconds));
    },
    tokenRequestFailed: (cause) => failures.labels(cause).inc(),
    gentokenDeferred: (trigger) => deferred.labels(trigger).inc(),
    upstreamUnauthorized: () => upstreamUnauthorized.inc(),
    guardDenied: () => guardDenied.inc(),
    requestStarted: () => inflight.inc(),
    requestEnded: () => inflight.dec(),
    upstreamRetried: (reason) => retries.labels(reason).inc(),
    replayCaptureDropped: (reason) => replayDropped.labels(reason).inc(),
    connectionRefused: (listener, reason) => refused.labels(listener, reason).inc(),
    tokenSuperseded: () => superseded.inc(),
    localResponse(route, code) {
      // Off the hot path (error answers only): a label lookup per call is fine.
      localResponses.labels(route === 'localization' ? 'localization' : 'service', String(statusLabel(code))).inc();
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

/** The labels of a watched translation (from `localization.watch`, never from a request). */
export interface TranslationLabels { project: string; component: string; language: string }
/** The `state` label values of the unit and word gauges, in the order their counts are given. */
export const TRANSLATION_STATES = {
  units: ['total', 'translated', 'fuzzy', 'failing_checks', 'have_suggestion', 'have_comment'],
  words: ['total', 'translated', 'fuzzy', 'failing_checks'],
} as const;
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

const TRANSLATION_LABELS = ['project', 'component', 'language'] as const;

/**
 * Registers the translation gauges on `registry`; only a sidecar with `localization.watch`
 * calls it (the README table lists them all, see metrics-table.ts).
 */
export function createTranslationMetrics(registry: Registry): TranslationMetrics {
  const registers = [registry];
  const units = new Gauge({ name: `${PREFIX}translation_units`, help: 'Units of a watched translation by state.', labelNames: [...TRANSLATION_LABELS, 'state'], registers });
  const words = new Gauge({ name: `${PREFIX}translation_words`, help: 'Words of a watched translation by state.', labelNames: [...TRANSLATION_LABELS, 'state'], registers });
  const lastChange = new Gauge({ name: `${PREFIX}translation_last_change_timestamp_seconds`, help: 'Time of the last change of a watched translation (Unix seconds); absent when never changed.', labelNames: TRANSLATION_LABELS, registers });
  const errors = new Counter({ name: `${PREFIX}translation_lookup_errors_total`, help: 'Failed or malformed lookups of a watched translation.', labelNames: TRANSLATION_LABELS, registers });
  const remaining = new Gauge({ name: `${PREFIX}translation_rate_limit_remaining`, help: 'X-RateLimit-Remaining of the last localization answer that carried it.', registers });
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
