/**
 * Every metric the sidecar exports, declared once: its name, type, help text, labels, the series
 * that exist at 0 from the start, its buckets, how a scrape-time gauge is read, and what
 * docs/metrics.md says beyond the help text. Registration (metric-registration.ts) iterates these
 * tables in order, the typed hooks (metrics.ts) are thin over the handles it returns, and the
 * docs table (metrics-table.ts) is rendered from them. The names are a contract: alerts and
 * dashboards in deploy/ read them, and test/fixtures/metrics-exposition.txt pins them.
 */
import { codeCell } from '../shared/readme-region.js';
import { ROUTE_NAMES, type RouteName } from '../shared/routes.js';
import type { TokenStatus } from './status.js';

/** Why a request was sent again on a fresh connection (`upstream_retries_total{reason}`, see upstream/upstream-retry.ts). */
const RETRY_REASONS = ['reset', 'broken_pipe', 'closed'] as const;
export type RetryReason = (typeof RETRY_REASONS)[number];
/** Why a request body's replay copy was given up (`replay_capture_dropped_total{reason}`, see proxy/body/replay-body.ts). */
const DROP_REASONS = ['request_limit', 'global_limit', 'source_limit'] as const;
export type CaptureDropReason = (typeof DROP_REASONS)[number];
/** Outcome of one gentoken request: 401 (credentials rejected) is told apart from other failures. */
const REFRESH_RESULTS = ['success', 'unauthorized', 'error'] as const;
export type RefreshResult = (typeof REFRESH_RESULTS)[number];
/** The listeners that refuse connections as they open (`connections_refused_total{listener}`). */
const LISTENERS = ['proxy', 'admin'] as const;
export type ListenerName = (typeof LISTENERS)[number];
/** Every listener (`connections_opened_total{listener}`): the proxy on TCP, on its unix socket, the admin listener. */
export type AnyListener = ListenerName | 'socket';
/** Why a connection was refused as it opened (see proxy/listener/listener.ts). */
const REFUSALS = ['not_allowed', 'per_source_limit', 'max_connections'] as const;
export type ConnectionRefusalReason = (typeof REFUSALS)[number];
export type { RouteName } from '../shared/routes.js';
/** Why a tunnel through the egress proxy failed (`egress_proxy_failures_total{reason}`, see upstream/connect-tunnel.ts). */
export const EGRESS_PROXY_FAILURES = ['unreachable', 'auth', 'refused', 'closed', 'timeout'] as const;
export type EgressProxyFailure = (typeof EGRESS_PROXY_FAILURES)[number];
/** Why a gentoken request failed: every `cause` label value of `token_request_failures_total`; a fixed set. */
export const GENTOKEN_CAUSES = [
  'unauthorized', 'refused', 'tls', 'dns', 'connection_refused', 'timeout', 'server_error', 'rate_limited', 'invalid_response', 'http', 'egress_proxy', 'unreachable',
] as const;
export type GentokenCause = (typeof GENTOKEN_CAUSES)[number];
/** What asked for a gentoken call that the budget or a Retry-After held back: every `trigger` label value of `gentoken_deferred_total`. */
export const GENTOKEN_TRIGGERS = ['start', 'renewal', 'retry', 'upstream_401', 'rotation'] as const;
export type GentokenTrigger = (typeof GENTOKEN_TRIGGERS)[number];

/**
 * The fair shares' numbers (`share_limit{limit}`, see parts/fair-shares.ts): streamed bodies one
 * source and all sources may hold per route, the replay bytes past which a source may not take the
 * budget's last share, and the replay room kept for small bodies received whole, in all and per
 * client connection.
 */
export const SHARE_LIMITS = ['streams_per_source', 'streams_all_sources', 'replay_bytes_per_source', 'replay_reserved_bytes', 'replay_reserved_bytes_per_connection'] as const;
export type ShareLimit = (typeof SHARE_LIMITS)[number];

/** The sidecar's own failure answers that B2BSidecarLocalErrors watches. */
const LOCAL_5XX = ['502', '503', '504'];
/**
 * The values the `route` and `method` labels can take; the recording (metrics.ts) normalises every
 * request to one of them, and docs/metrics.md lists them. The routes are declared in shared/routes.ts.
 */
export const LABEL_VALUES: { readonly route: readonly RouteName[]; readonly method: readonly string[] } = {
  route: ROUTE_NAMES,
  method: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'],
};
/** The `state` label values of the unit and word gauges, in the order their counts are given. */
export const TRANSLATION_STATES = {
  units: ['total', 'translated', 'fuzzy', 'failing_checks', 'have_suggestion', 'have_comment'],
  words: ['total', 'translated', 'fuzzy', 'failing_checks'],
} as const;

/** What the scrape-time gauges read, taken once per scrape (metric-registration.ts). */
export interface Scrape {
  /** The token's part of the one status (sidecar.ts `status()`): /readyz and /status render the same value. */
  token: TokenStatus | undefined;
  /** Every credential set's token (the status's `credentials`): the per-set gauges render one series each. */
  credentials: ReadonlyArray<{ id: string; token: TokenStatus | undefined }>;
  /** Bytes of request bodies held for replay right now. */
  replayHeldBytes: number;
  /** The fair shares: streamed bodies in flight and waiting, replay bytes held in the reserve, and the limits. */
  shares: Shares;
  build: { version: string; node: string };
  /** The `notAfter` of each route's client certificate (it changes on reload). */
  certificates: ReadonlyMap<RouteName, () => Date | undefined>;
}

/** What the share gauges read (metrics.ts MetricSources.shares). */
export interface Shares {
  streamsActive: number;
  streamsWaiting: number;
  reservedHeldBytes: number;
  limits: Readonly<Record<ShareLimit, number>> | undefined;
}

export interface MetricDefinition {
  readonly name: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  /** What Prometheus users see; wording belongs here first. */
  readonly help: string;
  readonly labels?: readonly string[];
  /** A counter's label value sets (in `labels` order) exported at 0 from the start, so rate() sees the first increase. */
  readonly startAtZero?: readonly (readonly string[])[];
  /**
   * A per-set counter (its last label is `credential`): these label value sets (without the
   * credential) start at 0 for each credential set when the set is made (metrics.ts `credentialStarted`).
   */
  readonly perCredential?: readonly (readonly string[])[];
  readonly buckets?: readonly number[];
  /** What docs/metrics.md says beyond `help`: only detail too long for it. */
  readonly note?: string;
  /** A gauge computed at scrape time. */
  readonly read?: (s: Scrape) => number;
  /** A labelled gauge computed at scrape time: its series are exactly these (label values in `labels` order). */
  readonly readEach?: (s: Scrape) => Iterable<readonly [readonly string[], number]>;
  /** Kept in plain numbers by request-series.ts (the hot path), not by the client's own metric. */
  readonly requestSeries?: true;
}

/** Every combination of the given label values, in order. */
function each(...lists: ReadonlyArray<readonly string[]>): string[][] {
  return lists.reduce<string[][]>((acc, list) => acc.flatMap((prefix) => list.map((v) => [...prefix, v])), [[]]);
}
const one = (list: readonly string[]) => each(list);
const unix = (iso: string | undefined) => (iso === undefined ? 0 : Date.parse(iso) / 1000);

/** From a cached loopback answer (1 ms) to the longest upstream deadline worth telling apart (30 s). */
const REQUEST_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const REFRESH_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const REQUEST_LABELS = ['route', 'method', 'code'];
/**
 * The label of every per-token series: the credential set's id (config/credential-sets.ts), never
 * a key. One series per set; a set removed from the config has none after the restart (docs/metrics.md).
 */
const CREDENTIAL = ['credential'];
/** A per-set gauge's series: one per credential set, read from its token's status. */
function perSet(s: Scrape, value: (token: TokenStatus | undefined) => number): Array<[string[], number]> {
  return s.credentials.map((c) => [[c.id], value(c.token)]);
}

/** The sidecar's metrics, in exposition order (after the client's default process metrics). */
export const SIDECAR_METRICS = {
  buildInfo: {
    name: 'b2b_sidecar_build_info', type: 'gauge', help: 'Always 1; the labels say which sidecar version runs on which Node.js.',
    labels: ['version', 'node'], readEach: (s) => [[[s.build.version, s.build.node], 1]],
  },
  tokenAge: {
    name: 'b2b_sidecar_token_age_seconds', type: 'gauge', help: 'Seconds since the current token was obtained (computed at scrape time).',
    labels: CREDENTIAL, readEach: (s) => perSet(s, (t) => t?.ageSeconds ?? 0),
  },
  tokenExpiresIn: {
    name: 'b2b_sidecar_token_expires_in_seconds', type: 'gauge', help: 'Seconds until the current token expires; 0 when none.',
    labels: CREDENTIAL, readEach: (s) => perSet(s, (t) => t?.expiresInSeconds ?? 0),
  },
  tokenValid: {
    name: 'b2b_sidecar_token_valid', type: 'gauge', help: '1 while a valid token is held, else 0.',
    labels: CREDENTIAL, readEach: (s) => perSet(s, (t) => (t?.ready ? 1 : 0)),
  },
  tokenExpiryTimestamp: {
    name: 'b2b_sidecar_token_expiry_timestamp_seconds', type: 'gauge', help: 'Wall-clock time (Unix seconds) when the current token expires; 0 when none.',
    labels: CREDENTIAL, readEach: (s) => perSet(s, (t) => unix(t?.expiresAt)),
  },
  tokenNextRefreshTimestamp: {
    name: 'b2b_sidecar_token_next_refresh_timestamp_seconds', type: 'gauge', help: 'Wall-clock time (Unix seconds) of the next gentoken attempt (now while one is in flight); 0 when none is scheduled.',
    labels: CREDENTIAL, readEach: (s) => perSet(s, (t) => unix(t?.nextAttemptAt)),
  },
  tokenRequestFailures: {
    name: 'b2b_sidecar_token_request_failures_total', type: 'counter', help: 'Failed gentoken requests by cause (unauthorized = 401, refused = 403, rate_limited = 429 or 503 with Retry-After, tls, dns, connection_refused, timeout, server_error, invalid_response, http, egress_proxy = the forward proxy failed, unreachable).',
    labels: ['cause', 'credential'], perCredential: one(GENTOKEN_CAUSES),
  },
  gentokenDeferred: {
    name: 'b2b_sidecar_gentoken_deferred_total', type: 'counter', help: 'Gentoken calls held back by token.maxGentokenPerMinute or a Retry-After, by what asked for them.',
    labels: ['trigger', 'credential'], perCredential: one(GENTOKEN_TRIGGERS),
  },
  tokenRefresh: {
    name: 'b2b_sidecar_token_refresh_total', type: 'counter', help: 'Token requests by result (success, unauthorized = gentoken 401, error).',
    labels: ['result', 'credential'], perCredential: one(REFRESH_RESULTS),
  },
  tokenRefreshDuration: {
    name: 'b2b_sidecar_token_refresh_duration_seconds', type: 'histogram', help: 'Latency of gentoken requests, success or not.',
    buckets: REFRESH_BUCKETS,
  },
  upstreamUnauthorized: {
    name: 'b2b_sidecar_upstream_unauthorized_total', type: 'counter', help: '401 answers from the service on proxied requests.',
  },
  requests: {
    name: 'b2b_sidecar_requests_total', type: 'counter', help: 'Proxied requests by route, method and status code.',
    labels: REQUEST_LABELS, requestSeries: true,
  },
  requestDuration: {
    name: 'b2b_sidecar_request_duration_seconds', type: 'histogram', help: 'Time to response headers of proxied requests.',
    labels: REQUEST_LABELS, buckets: REQUEST_BUCKETS, requestSeries: true,
  },
  guardDenied: {
    name: 'b2b_sidecar_guard_denied_total', type: 'counter', help: 'Requests refused by the source guard.',
  },
  inflight: {
    name: 'b2b_sidecar_inflight_requests', type: 'gauge', help: 'Proxied requests in progress.',
  },
  localResponses: {
    name: 'b2b_sidecar_local_responses_total', type: 'counter',
    help: 'Proxied requests the sidecar answered itself rather than passing the service\'s answer through, by route and status code; also counted in b2b_sidecar_requests_total.',
    labels: ['route', 'code'], startAtZero: each(LABEL_VALUES.route, LOCAL_5XX),
    note: '403 guard, 400 bad target, 405, 501 TRACE, 503 no valid token, 502 service unreachable / reset / TLS, 504 service timeout.',
  },
  upstreamRetries: {
    name: 'b2b_sidecar_upstream_retries_total', type: 'counter', help: 'Requests sent again on a fresh connection after a reused keep-alive connection to the service failed before any answer, by failure.',
    labels: ['reason'], startAtZero: one(RETRY_REASONS),
  },
  replayCaptureDropped: {
    name: 'b2b_sidecar_replay_capture_dropped_total', type: 'counter', help: 'Request bodies whose copy for a replay was given up: larger than proxy.replayBodyLimitBytes (request_limit), proxy.replayBufferTotalBytes full (global_limit), or the last share of it (proxy.streamedUploadShare), kept for other sources, needed by a source past its own (source_limit).',
    labels: ['reason'], startAtZero: one(DROP_REASONS),
  },
  connectionsRefused: {
    name: 'b2b_sidecar_connections_refused_total', type: 'counter', help: 'Connections closed as they opened, before any request: a source outside admin.allow (not_allowed), over maxConnectionsPerSource (per_source_limit), or the listener full (max_connections: proxy.maxConnections, 64 on admin; the socket listener has only this reason), by listener.',
    labels: ['listener', 'reason'], startAtZero: [...each(LISTENERS, REFUSALS), ['socket', 'max_connections']],
  },
  attachSuspect: {
    name: 'b2b_sidecar_attach_suspect', type: 'gauge', help: '1 while no request succeeds with the token as token.attach presents it (fresh tokens get 401 on several paths, or only refusals such as 400, 403, 404 or a redirect on several paths; run doctor --discover-attach), else 0.',
    labels: CREDENTIAL, readEach: (s) => perSet(s, (t) => (t?.attachSuspect ? 1 : 0)),
  },
  tokenSuperseded: {
    name: 'b2b_sidecar_token_superseded_total', type: 'counter', help: 'Tokens this process still held that the service rejected long before expiry after accepting them, where the renewal helped: most likely another process obtains tokens with the same ApiKey.',
    labels: CREDENTIAL, perCredential: [[]],
  },
  replayBuffer: {
    name: 'b2b_sidecar_replay_buffer_bytes', type: 'gauge', help: 'Bytes of request bodies held for a replay across all requests in flight (at most proxy.replayBufferTotalBytes).',
    read: (s) => s.replayHeldBytes,
  },
  streamedUploads: {
    name: 'b2b_sidecar_streamed_uploads', type: 'gauge', help: 'Request bodies streamed upstream now (active: each holds a service connection), and those waiting, unread, for their source\'s share or the streams\' part of proxy.maxSockets (waiting).',
    labels: ['state'], readEach: (s) => [[['active'], s.shares.streamsActive], [['waiting'], s.shares.streamsWaiting]],
  },
  replayReserved: {
    name: 'b2b_sidecar_replay_reserved_bytes', type: 'gauge', help: 'Bytes of small request bodies received whole held in the replay room kept for them (share_limit{limit="replay_reserved_bytes"}); also counted in b2b_sidecar_replay_buffer_bytes.',
    read: (s) => s.shares.reservedHeldBytes,
  },
  shareLimit: {
    name: 'b2b_sidecar_share_limit', type: 'gauge', help: 'The fair shares\' numbers, derived from proxy.* at start: streamed bodies one source (streams_per_source) and all sources (streams_all_sources) may hold per route; replay bytes past which a source may not take the budget\'s last share (replay_bytes_per_source); replay bytes kept for small bodies received whole (replay_reserved_bytes), at most replay_reserved_bytes_per_connection each.',
    labels: ['limit'],
    *readEach(s) {
      if (!s.shares.limits) return;
      for (const limit of SHARE_LIMITS) yield [[limit], s.shares.limits[limit]];
    },
    note: 'docs/design.md, "Request bodies", explains each number.',
  },
  egressProxyFailures: {
    name: 'b2b_sidecar_egress_proxy_failures_total', type: 'counter', help: 'CONNECT tunnels through the egress proxy (service.proxy, localization.proxy or HTTPS_PROXY) that failed, by route and reason (unreachable, auth = 407, refused = any other non-2xx, closed, timeout).',
    labels: ['route', 'reason'],
  },
  clientCertificateExpiry: {
    name: 'b2b_sidecar_client_certificate_expiry_timestamp_seconds', type: 'gauge', help: 'When the client certificate a route presents (service.certFile, localization.certFile) expires, in Unix seconds; absent for a route without one.',
    labels: ['route'],
    *readEach(s) {
      for (const [route, notAfter] of s.certificates) {
        const at = notAfter();
        if (at) yield [[route], Math.floor(at.getTime() / 1000)];
      }
    },
  },
  connectionsOpened: {
    name: 'b2b_sidecar_connections_opened_total', type: 'counter', help: 'Connections opened to each listener (proxy = TCP, socket = listen.socket, admin), refused ones included.',
    labels: ['listener'],
  },
  openConnections: {
    name: 'b2b_sidecar_open_connections', type: 'gauge', help: 'Connections open on each listener now (proxy = TCP, socket = listen.socket, admin).',
    labels: ['listener'],
  },
  fleetStoreUp: {
    name: 'b2b_sidecar_fleet_store_up', type: 'gauge', help: '1 while the fleet store (fleet.store) answers, 0 while it is unreachable; absent with fleet.store none.',
    labels: ['credential', 'store'], readEach: (s) => (s.token?.fleet ? [[[s.token.fleet.credential, s.token.fleet.store], s.token.fleet.state === 'down' ? 0 : 1]] : []),
  },
  fleetTokenSource: {
    name: 'b2b_sidecar_fleet_token_source', type: 'gauge', help: '1 for where the token in use came from: the fleet store (shared) or this process alone while the store was down (local).',
    labels: ['credential', 'source'],
    readEach: (s) => (s.token?.fleet ? (['shared', 'local'] as const).map((source) => [[s.token!.fleet!.credential, source], s.token!.fleet!.source === source ? 1 : 0] as const) : []),
  },
  fleetRecordVersion: {
    name: 'b2b_sidecar_fleet_record_version', type: 'gauge', help: 'Version of the shared record whose token is in use (one more per token published by the fleet).',
    labels: ['credential'], readEach: (s) => (s.token?.fleet?.version !== undefined ? [[[s.token.fleet.credential], s.token.fleet.version]] : []),
  },
  fleetTokenLifetime: {
    name: 'b2b_sidecar_fleet_token_lifetime_seconds', type: 'gauge', help: 'Effective lifetime of the shared token in use, in seconds (what the fleet\'s minting rate is judged against).',
    labels: ['credential'], readEach: (s) => (s.token?.fleet?.lifetimeSeconds !== undefined ? [[[s.token.fleet.credential], s.token.fleet.lifetimeSeconds]] : []),
  },
  fleetClaims: {
    name: 'b2b_sidecar_fleet_claims_total', type: 'counter', help: 'Renewal claims this process tried, by result: won (it renews), lost (a peer renews), error (the store failed).',
    labels: ['credential', 'result'],
  },
  fleetPublishConflicts: {
    name: 'b2b_sidecar_fleet_publish_conflicts_total', type: 'counter', help: 'Tokens this process obtained whose publish lost the compare-and-set: dropped, the store\'s token adopted.',
    labels: ['credential'],
  },
  fleetStoreErrors: {
    name: 'b2b_sidecar_fleet_store_errors_total', type: 'counter', help: 'Failed fleet store operations, by operation (read, claim, release, publish, invalidate, watch).',
    labels: ['credential', 'operation'],
  },
} satisfies Record<string, MetricDefinition>;

const WATCHED = 'Only with `localization.watch`; one series per watched translation.';
const states = (list: readonly string[]) => `\`state\` is ${list.map(codeCell).join(', ')}.`;
const TRANSLATION_LABELS = ['project', 'component', 'language'];

/** The translation gauges: registered only with `localization.watch` (localization/localization-part.ts). */
export const TRANSLATION_METRICS = {
  units: {
    name: 'b2b_sidecar_translation_units', type: 'gauge', help: 'Units of a watched translation by state.',
    labels: [...TRANSLATION_LABELS, 'state'], note: `${states(TRANSLATION_STATES.units)} ${WATCHED}`,
  },
  words: {
    name: 'b2b_sidecar_translation_words', type: 'gauge', help: 'Words of a watched translation by state.',
    labels: [...TRANSLATION_LABELS, 'state'], note: `${states(TRANSLATION_STATES.words)} ${WATCHED}`,
  },
  lastChange: {
    name: 'b2b_sidecar_translation_last_change_timestamp_seconds', type: 'gauge', help: 'Time of the last change of a watched translation (Unix seconds); absent when never changed.',
    labels: TRANSLATION_LABELS, note: WATCHED,
  },
  lookupErrors: {
    name: 'b2b_sidecar_translation_lookup_errors_total', type: 'counter', help: 'Failed or malformed lookups of a watched translation.',
    labels: TRANSLATION_LABELS, note: WATCHED,
  },
  rateLimitRemaining: {
    name: 'b2b_sidecar_translation_rate_limit_remaining', type: 'gauge', help: 'X-RateLimit-Remaining of the last localization answer that carried it.',
    note: 'Only with `localization.watch`.',
  },
} satisfies Record<string, MetricDefinition>;
