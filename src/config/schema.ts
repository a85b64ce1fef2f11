/**
 * config/: the configuration: this schema (the single source of keys, defaults, env vars and
 * descriptions), loading, validation and its checks, warnings, the README config table.
 * May import: shared/ only. The request path (proxy/, upstream/) never imports config/: settings
 * reach it as plain options.
 */
import { Type, type Static } from '@sinclair/typebox';
import { ATTACHMENT_KINDS, KIND_FIELDS, type Attachment } from '../shared/attachment.js';
import { MAX_TIMER_MS } from '../shared/clock.js';
import { localizationSection, serviceSection } from './upstream-sections.js';
import { credentialsSchema, readinessSection } from './credential-sets-schema.js';

/**
 * The configuration schema: one source for validation (ajv), the TypeScript `Config` type, the
 * README configuration table (a test checks the README against this file) and `check-config`.
 * `x-env` names the environment variable that overrides a key; `x-secret` marks values that are
 * redacted wherever the config is printed. The keys of an upstream (`service`, `localization`) are
 * declared once in shared/upstream-keys.ts; every env name follows the rule of shared/env-names.ts.
 */
const env = (name: string) => ({ 'x-env': name });
const secret = { 'x-secret': true };
/** The file's contents are re-read on change and on SIGHUP (every other key needs a restart). */
const reread = { 'x-reload': 'file re-read' };
/** The file holds a secret: run and check-config warn when every local user can read it. */
const secretFile = { 'x-secret-file': true };

/** Node fires a timer longer than 2^31-1 ms after 1 ms (docs/traps.md T15): no duration may exceed it. */
const millis = { maximum: MAX_TIMER_MS };
/** Seconds settings become timers in ms. */
const seconds = { maximum: Math.floor(MAX_TIMER_MS / 1000) };
/**
 * Largest replay buffer: bodies up to the limit are held in memory, per request (measured: with
 * 10^12 accepted, one 200 MB POST took the process from 63 MB to 847 MB).
 */
const MAX_REPLAY_BODY_BYTES = 64 * 1024 * 1024;
/** The API requires a renewal at least every 15 minutes (config/b2b-auth.swagger.yaml, info.description). */
const MAX_TOKEN_LIFETIME_SECONDS = 900;

const Port = (def: number, envName: string, description: string) =>
  Type.Integer({ minimum: 0, maximum: 65535, default: def, description, ...env(envName) });

const Listener = (port: number, portEnv: string, what: string) =>
  Type.Object(
    {
      host: Type.String({ minLength: 1, default: '127.0.0.1', description: `Address the ${what} listener binds to.` }),
      port: Port(port, portEnv, `TCP port of the ${what} listener (0 picks a free port).`),
    },
    { additionalProperties: false, default: {} },
  );

/**
 * One `token.attach` entry: `in` picks the kind (shared/attachment.ts, ATTACHMENT_KINDS), and the
 * fields of every kind are optional keys of this one object, so the walker, the README table and
 * the example see each of them (`token.attach[].name`). Which fields a kind needs, and that it has
 * no other kind's, is checked by config/attach-checks.ts from KIND_FIELDS; the TypeScript type is
 * the union of the kinds' shapes.
 */
/** The kinds whose entries need `field` (KIND_FIELDS): the README table says so. */
const requiredFor = (field: string) => ({
  'x-required-for': ATTACHMENT_KINDS.filter((kind) => (KIND_FIELDS[kind].required as readonly string[]).includes(field)),
});

export const AttachmentSchema = Type.Unsafe<Attachment>(Type.Object(
  {
    in: Type.Union(ATTACHMENT_KINDS.map((kind) => Type.Literal(kind)), {
      description: 'Where the value goes: a request header, a query parameter, a cookie, or basic: HTTP Basic authentication (Authorization: Basic base64(user:password), RFC 7617).',
    }),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'Header, parameter or cookie name.', ...requiredFor('name') })),
    value: Type.Optional(Type.String({
      maxLength: 8192,
      description: 'Template; {token}, {apiKey} and {rkObjectId} are replaced with the current values. At least one entry must carry {token}.',
      ...requiredFor('value'),
    })),
    user: Type.Optional(Type.String({ minLength: 1, maxLength: 8192, description: 'The user of a basic entry; a template like value (e.g. {apiKey}). No colon.', ...requiredFor('user') })),
    password: Type.Optional(Type.String({ maxLength: 8192, description: 'The password of a basic entry; a template like value (e.g. {token}).', ...requiredFor('password') })),
  },
  { additionalProperties: false },
));

export const DEFAULT_ATTACH = [
  { in: 'header' as const, name: 'Authorization', value: 'Bearer {token}' },
  { in: 'header' as const, name: 'ApiKey', value: '{apiKey}' },
];

const Cidrs = (def: string[], description: string) =>
  Type.Array(Type.String({ minLength: 1 }), { default: def, description });

/** The upstream sections: the keys declared once in shared/upstream-keys.ts, then each section's own. */
export const LocalizationSchema = localizationSection();

export const ConfigSchema = Type.Object(
  {
    listen: Type.Object(
      {
        host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address the proxy (plain HTTP) listener binds to.' }),
        port: Port(8080, 'B2B_LISTEN_PORT', 'TCP port of the proxy (plain HTTP) listener (0 picks a free port).'),
        socket: Type.Optional(Type.String({ pattern: '^/', description: 'Also serve the proxy on this unix socket (an absolute path), e.g. /run/b2b-sidecar/sidecar.sock. Its file mode is the guard: guard.allow cannot apply to it.', ...env('B2B_LISTEN_SOCKET') })),
        socketMode: Type.String({ pattern: '^0?[0-7]{3}$', default: '0660', description: 'File mode of listen.socket (octal). Connecting needs write permission: a mode that lets every user write (o+w) needs guard.allowAnyone.' }),
        socketGroup: Type.Optional(Type.String({ minLength: 1, description: 'Group (name or number) given to listen.socket, so the apps in it can connect.' })),
      },
      { additionalProperties: false, default: {} },
    ),
    admin: Type.Object(
      {
        host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'Address the admin listener (/metrics, /healthz, /readyz) binds to.' }),
        port: Port(9464, 'B2B_ADMIN_PORT', 'TCP port of the admin listener (0 picks a free port).'),
        allow: Cidrs(['0.0.0.0/0', '::/0'], 'Source addresses or CIDRs allowed on the admin listener (default: any, so Prometheus can scrape).'),
        allowShutdown: Type.Boolean({ default: false, description: 'Serve POST /shutdown, which starts a graceful drain (for Kubernetes Jobs).' }),
        maxConnectionsPerSource: Type.Integer({ minimum: 1, maximum: 64, default: 8, description: 'Most simultaneous connections from one source address to the admin listener (64 in all); 127.0.0.1 and ::1, where healthcheck and wait come from, are not counted. A source outside admin.allow is refused when it connects.' }),
      },
      { additionalProperties: false, default: {} },
    ),
    service: serviceSection(),
    credentials: credentialsSchema(),
    token: Type.Object(
      {
        renewAt: Type.Number({ exclusiveMinimum: 0, maximum: 0.9, default: 0.66, description: 'Fraction of the effective lifetime after which the token is renewed.' }),
        maxLifetimeSeconds: Type.Number({ minimum: 2, maximum: MAX_TOKEN_LIFETIME_SECONDS, default: MAX_TOKEN_LIFETIME_SECONDS, description: 'Effective lifetime = min(aliveSecondsTtl, this), 2 to 900 seconds: the API requires renewal at least every 15 minutes.' }),
        file: Type.Optional(Type.String({ minLength: 1, description: 'If set, the current token is written here atomically (mode 0600) on every renewal.', ...env('B2B_TOKEN_FILE') })),
        maxGentokenPerMinute: Type.Integer({ minimum: 1, maximum: 600, default: 12, description: 'Hard ceiling on the gentoken calls answers and retries ask for (start, retry, service 401, rotation) in any 60 seconds; scheduled renewals are never held back. A 401 over it waits for the scheduled renewal when that is due within 2 s, else it is passed back; another call waits. Normal use is about 1 per 10 minutes.' }),
        maxRetryAfterSeconds: Type.Integer({ minimum: 1, maximum: 3600, default: 600, description: 'Longest Retry-After (of a gentoken 429 or 503) honoured, in seconds; no gentoken call is made before it ends.' }),
        startJitterSeconds: Type.Number({ minimum: 0, maximum: 300, default: 0, description: 'Random delay of up to this many seconds before the first gentoken call, so a fleet started at once does not call in lock-step; 0 = off.' }),
        maxConcurrentGentoken: Type.Integer({ minimum: 1, maximum: 64, default: 8, description: 'Most gentoken calls on the wire at once across all credential sets; the others wait their turn, first come first served (not counted against service.tokenTimeoutMs). 8 fetches 1,000 sets\' first tokens in about 2.5 s at 20 ms a call.' }),
        attach: Type.Array(AttachmentSchema, { default: DEFAULT_ATTACH, description: 'How credentials are attached to every proxied request, in order; a client-sent value of the same name is removed first.' }),
      },
      { additionalProperties: false, default: {} },
    ),
    proxy: Type.Object(
      {
        engine: Type.Union([Type.Literal('undici'), Type.Literal('http-proxy')], {
          default: 'undici',
          description: 'Transport to the service: undici\'s pool (default, cheapest per request) or http-proxy 1.18.1; see the Performance section.',
        }),
        timeoutMs: Type.Optional(Type.Integer({ ...millis, minimum: 100, description: 'Deprecated: the old name of service.timeoutMs (the same deadline), which it overrides while set; run and check-config warn. In milliseconds (→ 504).' })),
        idleTimeoutMs: Type.Integer({ ...millis, minimum: 100, default: 60000, description: 'Longest silence while a response body streams, and longest a client may stop reading one, before the exchange is cut, in milliseconds.' }),
        replayBodyLimitBytes: Type.Integer({ minimum: 0, maximum: MAX_REPLAY_BODY_BYTES, default: 1048576, description: 'A request body with a Content-Length up to this size (at most 64 MiB) is received whole before it takes a service connection, and can be sent once more after an upstream 401 or a stale connection; a chunked one streams with a copy kept up to this size; larger ones stream and get the 401 passed back. 0 turns both off.' }),
        replayBufferTotalBytes: Type.Integer({ minimum: 0, default: 67108864, description: 'Most bytes held for replays across all requests in flight; a request that would exceed it loses its replay (b2b_sidecar_replay_buffer_bytes). 8 KiB per client connection (proxy.maxConnections, twice with listen.socket; at most a quarter of it) is kept for small bodies received whole, so another app\'s small POST is always replayable.' }),
        maxSockets: Type.Integer({ minimum: 1, default: 128, description: 'Most concurrent keep-alive connections to the service.' }),
        keepAliveTimeoutMs: Type.Integer({ ...millis, minimum: 100, default: 4000, description: 'Idle keep-alive connections to the service are closed after this (keep it below the service\'s own; lowered automatically when the service is seen closing idle connections sooner: docs/design.md, "Reliability").' }),
        requestTimeoutMs: Type.Integer({ ...millis, minimum: 1000, default: 300000, description: 'Longest time a client may take to send a whole request to the listener.' }),
        headersTimeoutMs: Type.Integer({ ...millis, minimum: 1000, default: 20000, description: 'Longest time a client may take to send request headers to the listener.' }),
        maxHeaderBytes: Type.Integer({ minimum: 1024, maximum: 1048576, default: 16384, description: 'Largest request header block accepted (→ 431).' }),
        maxConnections: Type.Integer({ minimum: 1, default: 1024, description: 'Most simultaneous client connections on the listener.' }),
        minUploadBytesPerSecond: Type.Integer({ minimum: 0, default: 1024, description: 'A request body being read may never fall more than 10 s behind this rate (checked every second), or it is cut with 408 and its upstream connection released. 0 = off.' }),
        streamedUploadShare: Type.Number({ exclusiveMinimum: 0, maximum: 1, default: 0.25, description: 'Share of proxy.maxSockets one source address may hold with streamed request bodies (larger than proxy.replayBodyLimitBytes, or chunked) at once, per route (at least 1); its further ones wait, unread: slow uploads from one source cannot hold every service connection. All sources together stream on at most ¾ of proxy.maxSockets: the rest is kept for requests whose body is complete. Past the same share of proxy.replayBufferTotalBytes (at least proxy.replayBodyLimitBytes) a source may not take the last share of it: that room is kept for other sources (b2b_sidecar_share_limit).' }),
        maxConnectionsPerSource: Type.Integer({ minimum: 1, default: 256, description: 'Most simultaneous connections from one source address; more are answered 503 and closed at once (b2b_sidecar_connections_refused_total). All local apps share 127.0.0.1, so keep it high on a host; it matters when the listener serves several hosts.' }),
      },
      { additionalProperties: false, default: {} },
    ),
    guard: Type.Object(
      {
        allow: Cidrs(['127.0.0.1/32', '::1/128'], 'Source addresses or CIDRs allowed to use the proxy listener; everything else gets 403.'),
        trustedProxies: Cidrs([], 'Direct peers whose X-Forwarded-For is believed (rightmost untrusted address wins). Only proxies: any other client in these ranges can pick its own source address.'),
        allowAnyone: Type.Boolean({ default: false, description: 'Permit allow or trustedProxies entries that cover everyone (0.0.0.0/0, ::/0, IPv4 shorter than /8, IPv6 shorter than /16): anyone who can reach the listener then acts as the integrator. Logged as a warning at start.' }),
      },
      { additionalProperties: false, default: {} },
    ),
    shutdown: Type.Object(
      {
        delaySeconds: Type.Number({ ...seconds, minimum: 0, default: 0, description: 'After SIGTERM, keep accepting for this long (readiness is already 503) so load balancers notice.' }),
        timeoutSeconds: Type.Number({ ...seconds, minimum: 0, default: 30, description: 'Then let in-flight requests finish for up to this long.' }),
      },
      { additionalProperties: false, default: {} },
    ),
    log: Type.Object(
      {
        level: Type.Union(
          ['error', 'warn', 'info', 'debug'].map((l) => Type.Literal(l)),
          { default: 'info', description: 'Log level.', ...env('B2B_LOG_LEVEL') },
        ),
        requests: Type.Boolean({ default: false, description: 'Log one line per proxied request (method, path with every query value shown as ***, route, status, duration, source).', ...env('B2B_LOG_REQUESTS') }),
      },
      { additionalProperties: false, default: {} },
    ),
    localization: Type.Optional(LocalizationSchema),
    fleet: Type.Object(
      {
        store: Type.Union([Type.Literal('none'), Type.Literal('sqlite'), Type.Literal('redis'), Type.Literal('kubernetes')], { default: 'none', description: 'Where several sidecars on one ApiKey share one token (docs/fleet.md): none (each renews alone), sqlite (processes on one host, fleet.sqlitePath), redis (fleet.redisUrl) or kubernetes (the Secret fleet.kubernetesSecret).', ...env('B2B_FLEET_STORE') }),
        redisUrl: Type.Optional(Type.String({ pattern: '^(redis|rediss|unix)://', description: 'The Redis server: redis://host:port/db, rediss:// (TLS) or unix:///path/to/socket; an ACL user may be in the URL (redis://user@host), its password belongs in fleet.redisPasswordFile.', ...env('B2B_FLEET_REDIS_URL'), ...secret })),
        redisPasswordFile: Type.Optional(Type.String({ minLength: 1, description: 'File holding the Redis password (AUTH); read again whenever Redis refuses the password in use, so a rotated password needs no restart.', ...env('B2B_FLEET_REDIS_PASSWORD_FILE'), ...secretFile })),
        redisCaFile: Type.Optional(Type.String({ minLength: 1, description: 'Extra CA certificates (PEM) trusted for a rediss:// server, besides the system roots.', ...env('B2B_FLEET_REDIS_CA_FILE') })),
        sqlitePath: Type.Optional(Type.String({ minLength: 1, description: 'The SQLite database file the processes of one host share (created 0600 on first use); its directory must be writable by each.', ...env('B2B_FLEET_SQLITE_PATH') })),
        kubernetesSecret: Type.Optional(Type.String({ pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$', description: 'Name of the pre-created Secret the token is shared through (RBAC: get, list, watch and update on it by name).', ...env('B2B_FLEET_KUBERNETES_SECRET') })),
        kubernetesNamespace: Type.Optional(Type.String({ minLength: 1, description: 'Namespace of fleet.kubernetesSecret; default: the pod\'s own (from its service account).', ...env('B2B_FLEET_KUBERNETES_NAMESPACE') })),
        kubernetesServiceAccountDir: Type.String({ pattern: '^/', default: '/var/run/secrets/kubernetes.io/serviceaccount', description: 'Where the pod\'s service-account token (re-read as kubelet rotates it), the cluster CA (ca.crt) and namespace are mounted; the API server is found from KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.', ...env('B2B_FLEET_KUBERNETES_SERVICE_ACCOUNT_DIR') }),
        onStoreDown: Type.Union([Type.Literal('local'), Type.Literal('wait')], { default: 'local', description: 'While the store is unreachable the current token keeps serving; near its end: local renews alone (budgeted, jittered) and publishes once the store is back, wait serves until the token\'s end and then answers 503 naming the store.', ...env('B2B_FLEET_ON_STORE_DOWN') }),
        pollIntervalSeconds: Type.Number({ minimum: 0.1, maximum: 300, default: 5, description: 'How often the store is read for a peer\'s newer token (besides the store\'s change feed where it has one, and the renewal\'s own read).' }),
        claimMarginSeconds: Type.Number({ minimum: 1, maximum: 600, default: 5, description: 'The renewal claim lives service.tokenTimeoutMs plus this (the reads and the publish around the gentoken call), so it always outlives the call; a claimant that dies is replaced once it lapses. At most a tenth of the token\'s lifetime is used, so short tokens outlive a dead claimant\'s claim (keep service.tokenTimeoutMs well under their lifetime too).' }),
        clockSkewSeconds: Type.Number({ minimum: 0, maximum: 60, default: 1, description: 'How far the hosts\' clocks may differ: a shared token is taken to end this much sooner (at most a quarter of its lifetime).' }),
      },
      { additionalProperties: false, default: {} },
    ),
    readiness: readinessSection(),
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
export type { Attachment } from '../shared/attachment.js';
export type FleetConfig = Static<typeof ConfigSchema>['fleet'];
export type LocalizationConfig = Static<typeof LocalizationSchema>;
export type { SingleCredentials, CredentialSetEntry } from './credential-sets-schema.js';
