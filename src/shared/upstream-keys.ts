/**
 * The keys of a route's upstream, declared once: the way to one server (its address, the trust,
 * the forward proxy, the client certificate, the deadline). `service` and `localization` each hold
 * every key below; from this table come their schema fragments (config/upstream-sections.ts), so
 * the README table, the example's check, the defaults, the environment variable names (the rule of
 * shared/env-names.ts) and the settings type that upstream/open-upstream.ts takes.
 *
 * Only config/ loads this module at run time (TypeBox builds the schema once); the request path
 * imports its types alone.
 */
import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { GENTOKEN_PATH } from './api-paths.js';
import { MAX_TIMER_MS } from './clock.js';
import { envNameOf } from './env-names.js';
import { ROUTES, type UpstreamName } from './routes.js';

export type { UpstreamName } from './routes.js';
/** The config sections that are an upstream: each route's (routes.ts), in its order. */
export const UPSTREAM_NAMES: readonly UpstreamName[] = ROUTES.map((r) => r.section);

/** The schema marks a key's flags become, to spread into its TypeBox options. */
export interface KeyMarks {
  'x-env'?: string;
  'x-secret'?: true;
  'x-reload'?: 'file re-read';
  'x-secret-file'?: true;
}

/** One upstream key: its type, default and description per section, and its flags. */
export interface UpstreamKey<T extends TSchema = TSchema> {
  /** The key's schema (type, bounds, default, description) under section `s`; spread `marks` into its options. */
  schema: (s: UpstreamName, marks: KeyMarks) => T;
  /** Overridable by an environment variable, named by the rule (B2B_BASE_URL, B2B_L10N_BASE_URL). */
  env?: true;
  /** Redacted wherever the config is printed. */
  secret?: true;
  /** A file whose contents are re-read on change and on SIGHUP (every other key needs a restart). */
  reread?: true;
  /** A file holding a secret: a warning when every local user can read it. */
  secretFile?: true;
}

export type UpstreamKeys = Readonly<Record<string, UpstreamKey>>;

/** The route whose upstream section `s` is (routes.ts): what its descriptions call its server, its deadline. */
const routeOf = (s: UpstreamName) => ROUTES.find((r) => r.section === s)!;
/** Bounds of every upstream deadline: Node fires a longer timer at once (docs/traps.md T15). */
const DEADLINE_BOUNDS = { maximum: MAX_TIMER_MS, minimum: 100 } as const;
const FILE = { minLength: 1 } as const;

export const UPSTREAM_KEYS = {
  baseUrl: {
    env: true,
    schema: (s, marks) => Type.String({ ...FILE, description: s === 'service' ? `Base address of the B2B service ({base_url}); the token operation is {baseUrl}${GENTOKEN_PATH}.` : 'Address of the Weblate-style localization server.', ...marks }),
  },
  caFile: {
    env: true,
    schema: (s, marks) => Type.Optional(Type.String({ ...FILE, description: s === 'service' ? 'Extra trusted CA (PEM file), added to the system roots.' : 'Extra trusted CA (PEM file) for the localization server, added to the system roots.', ...marks })),
  },
  allowInsecureHttp: {
    schema: (s, marks) => Type.Boolean({ default: false, description: s === 'service' ? 'Allow an http:// baseUrl. Never in production: the token would travel in clear text.' : 'Allow an http:// localization baseUrl (tests only).', ...marks }),
  },
  timeoutMs: {
    schema: (s, marks) => Type.Integer({
      ...DEADLINE_BOUNDS, default: routeOf(s).deadlineMs,
      ...(s === 'service'
        ? { description: 'Deadline for the service to answer a proxied request with headers, in milliseconds (→ 504): counted from dispatch, so time queued for a free upstream connection counts, but not the time a client takes to upload a streamed body while it keeps sending.' }
        : { description: 'Deadline for a localization request, in milliseconds.' }),
      ...marks,
    }),
  },
  proxy: {
    secret: true,
    schema: (s, marks) => Type.Optional(Type.String({ ...FILE, description: `Forward proxy to ${routeOf(s).server}: http://[user:password@]host:port (an HTTP CONNECT tunnel; TLS stays end to end and is verified as without it), or none. Unset: https_proxy/HTTPS_PROXY from the environment, minus the hosts in no_proxy/NO_PROXY.`, ...marks })),
  },
  proxyAuthFile: {
    reread: true, secretFile: true,
    schema: (s, marks) => Type.Optional(Type.String({ ...FILE, description: `File holding user:password for ${s}.proxy (Basic authentication; re-read on change and on SIGHUP); replaces a user in the proxy URL.`, ...marks })),
  },
  certFile: {
    reread: true,
    schema: (s, marks) => Type.Optional(Type.String({ ...FILE, description: `Client certificate (PEM, leaf first, then intermediates) presented to ${routeOf(s).server} for mutual TLS; needs ${s}.keyFile (re-read on change and on SIGHUP).`, ...marks })),
  },
  keyFile: {
    reread: true, secretFile: true,
    schema: (s, marks) => Type.Optional(Type.String({ ...FILE, description: `Private key (PEM) of ${s}.certFile (re-read on change and on SIGHUP).`, ...marks })),
  },
  keyPassphraseFile: {
    reread: true, secretFile: true,
    schema: (s, marks) => Type.Optional(Type.String({ ...FILE, description: `File holding the passphrase of an encrypted ${s}.keyFile (re-read on change and on SIGHUP).`, ...marks })),
  },
} satisfies UpstreamKeys;

/** The TypeBox properties a declaration gives one section. */
export type UpstreamProperties<K extends UpstreamKeys = typeof UPSTREAM_KEYS> = { -readonly [P in keyof K]: ReturnType<K[P]['schema']> };

/** The settings of one upstream as the validated config holds them, derived from a declaration. */
export type UpstreamSettingsOf<K extends UpstreamKeys> = Static<TObject<UpstreamProperties<K>>>;

/** `config.service` and `config.localization` as openUpstream reads them: every declared key. */
export type UpstreamSettings = UpstreamSettingsOf<typeof UPSTREAM_KEYS>;

/** The schema marks of `key` under `section`: its env name (by the rule), secret and re-read marks. */
export function keyMarks(section: UpstreamName, key: string, declared: UpstreamKey): KeyMarks {
  return {
    ...(declared.env ? { 'x-env': envNameOf([section, key]) } : {}),
    ...(declared.secret ? { 'x-secret': true as const } : {}),
    ...(declared.reread ? { 'x-reload': 'file re-read' as const } : {}),
    ...(declared.secretFile ? { 'x-secret-file': true as const } : {}),
  };
}

/** The schema properties of every declared key under `section`, in declaration order. */
export function upstreamProperties<K extends UpstreamKeys>(section: UpstreamName, keys: K): UpstreamProperties<K> {
  const out: Record<string, TSchema> = {};
  for (const [key, declared] of Object.entries(keys)) out[key] = declared.schema(section, keyMarks(section, key, declared));
  return out as UpstreamProperties<K>;
}
