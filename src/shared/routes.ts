/**
 * The proxy listener's routes, declared once, each with its policy: its name (the `route` label of
 * every metric and log line), the config section of its upstream (the keys of upstream-keys.ts),
 * its path prefix, its methods and its deadlines (the route's, and per path prefix). From this
 * table come the metric label values (observability/metric-definitions.ts), the upstream sections
 * (UPSTREAM_NAMES in upstream-keys.ts), the defaults of `<section>.timeoutMs` and
 * `localization.pathPrefix`, and the `RouteName` type.
 *
 * `compileRoute` turns a route and its section's settings into its policy once, at start
 * (upstream/open-upstream.ts); the route's part builds its `ProxyRoute` from it, and every engine on
 * the route's upstream applies its deadlines. Nothing on the request path reads the config.
 */

/** What a route declares: fixed facts and the defaults its section's keys take. */
export interface RouteDeclaration {
  /** The `route` label value and the name in logs. */
  readonly name: string;
  /** The config section of its upstream: address, trust, way out, deadline (upstream-keys.ts). */
  readonly section: string;
  /** What its section's descriptions call its server. */
  readonly server: string;
  /** Path prefix on the proxy listener ('' matches everything), stripped before forwarding. */
  readonly prefix: string;
  /** The section's key that replaces `prefix`, if the operator may choose it. */
  readonly prefixKey?: string;
  /** The methods it forwards; absent: all. */
  readonly methods?: readonly string[];
  /** Default of `<section>.timeoutMs`: the deadline for the upstream's response headers, in milliseconds. */
  readonly deadlineMs: number;
}

/** Every route, in the order the metrics list their `route` label values. */
export const ROUTES = [
  { name: 'service', section: 'service', server: 'the service (gentoken and proxied requests)', prefix: '', deadlineMs: 30_000 },
  {
    name: 'localization', section: 'localization', server: 'the localization server', prefix: '/l10n', prefixKey: 'pathPrefix',
    methods: ['GET', 'HEAD'], deadlineMs: 10_000,
  },
] as const satisfies readonly RouteDeclaration[];

type Declared = (typeof ROUTES)[number];
/** A route's name: the only values the `route` label can take (never a raw path). */
export type RouteName = Declared['name'];
/** A config section that is a route's upstream. */
export type UpstreamName = Declared['section'];

/** Every route's name, in declaration order. */
export const ROUTE_NAMES: readonly RouteName[] = ROUTES.map((r) => r.name);

/** The declaration of route `name`. */
export function routeDeclaration(name: RouteName): RouteDeclaration {
  return ROUTES.find((r) => r.name === name)!;
}

/** One `<section>.pathTimeouts` entry as the config holds it. */
export interface PathTimeout {
  readonly pathPrefix: string;
  readonly timeoutMs: number;
}

/** A path deadline, compiled: `ms` replaces the route's deadline for a path that starts with `prefix`. */
export interface PathDeadline {
  readonly prefix: string;
  readonly ms: number;
}

/** The deadlines every engine to a route's upstream applies (EngineOptions, upstream/engine.ts). */
export interface RouteDeadlines {
  /** `<section>.timeoutMs`: for the upstream's response headers, counted from dispatch (→ 504). */
  readonly headersTimeoutMs: number;
  /** `<section>.pathTimeouts`, longest prefix first; absent when none is configured. */
  readonly pathDeadlines?: readonly PathDeadline[];
}

/**
 * The entry of `table` (longest prefix first, as compiled) whose prefix starts `path`: the longest
 * match, in one pass; undefined when none does (the route's deadline applies).
 */
export function deadlineFor<T extends { readonly prefix: string }>(table: readonly T[], path: string): T | undefined {
  for (const entry of table) if (path.startsWith(entry.prefix)) return entry;
  return undefined;
}

/** A route's policy, compiled once at start from its declaration and its section's settings. */
export interface RoutePolicy {
  readonly name: RouteName;
  readonly section: UpstreamName;
  /** Path prefix on the proxy listener ('' matches everything); stripped before forwarding. */
  readonly prefix: string;
  /** Allowed methods; undefined allows all. */
  readonly methods: ReadonlySet<string> | undefined;
  readonly deadlines: RouteDeadlines;
}

/** The keys of a route's section its policy reads (the validated config holds them). */
export interface RouteSettings {
  readonly timeoutMs: number;
  readonly pathTimeouts?: readonly PathTimeout[];
  readonly [key: string]: unknown;
}

/** Compiles route `name`'s policy from its section's settings. */
export function compileRoute(name: RouteName, settings: RouteSettings): RoutePolicy {
  const declared = routeDeclaration(name);
  const chosen = declared.prefixKey === undefined ? undefined : settings[declared.prefixKey];
  return {
    name,
    section: declared.section as UpstreamName,
    prefix: typeof chosen === 'string' ? chosen : declared.prefix,
    methods: declared.methods && new Set(declared.methods),
    deadlines: {
      headersTimeoutMs: settings.timeoutMs,
      // Stable sort: of two equal prefixes the first listed wins.
      ...(settings.pathTimeouts?.length
        ? { pathDeadlines: settings.pathTimeouts.map((p) => ({ prefix: p.pathPrefix, ms: p.timeoutMs })).sort((a, b) => b.prefix.length - a.prefix.length) }
        : {}),
    },
  };
}
