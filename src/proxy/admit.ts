/**
 * Admit: what the request path decides before anything is read or sent. The source guard (one
 * decision per connection when only the peer counts), the route by longest prefix, and the
 * sidecar's own refusals: a bad target (before and after the prefix is removed), a method the
 * route does not allow, TRACE in any spelling. Pure apart from the guard's per-connection cache.
 */
import type { IncomingMessage } from 'node:http';
import type { IpGuard } from '../shared/ip-guard.js';
import { isLocalSocket } from './listener/local-socket.js';
import type { ProxyRoute } from './proxy-route.js';
import { checkRequestTarget } from './request-target.js';

/** A refusal by the sidecar itself, before anything is sent upstream. */
export interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

const GUARD_DECISION = Symbol('b2b-sidecar.guard');
type GuardedSocket = { [GUARD_DECISION]?: boolean };

/** The source guard as the handler asks it: may this request's source use the proxy? */
export function guardCheck(guard: IpGuard): (req: IncomingMessage) => boolean {
  return (req) => {
    // The unix-socket listener: its file mode is the guard (local-socket.ts).
    if (isLocalSocket(req.socket)) return true;
    if (guard.peerOnly) {
      const socket = req.socket as typeof req.socket & GuardedSocket;
      // One decision per connection: the peer cannot change on a keep-alive socket.
      return (socket[GUARD_DECISION] ??= guard.allows(guard.clientAddress(req.socket.remoteAddress, undefined)));
    }
    return guard.allows(guard.clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for']));
  };
}

/** The routes in the order `pickRoute` tries them: longest prefix first. */
export function byLongestPrefix(routes: readonly ProxyRoute[]): ProxyRoute[] {
  return [...routes].sort((a, b) => b.prefix.length - a.prefix.length);
}

/**
 * The route for a request target: the first (longest) prefix that matches on a segment boundary;
 * the last route when none does. `routes` sorted by `byLongestPrefix`.
 */
export function pickRoute(routes: readonly ProxyRoute[], url: string): ProxyRoute {
  for (const route of routes) {
    if (route.prefix === '') return route;
    if (url.startsWith(route.prefix)) {
      const next = url.charCodeAt(route.prefix.length);
      if (Number.isNaN(next) || next === 47 /* / */ || next === 63 /* ? */) return route;
    }
  }
  return routes[routes.length - 1]!;
}

/** Past this many routes (one per credential set with a pathPrefix), `pickRoute`'s scan gives way to an index. */
export const ROUTE_SCAN_LIMIT = 16;

/**
 * `pickRoute` for many routes (a prefix per credential set, docs/credential-sets.md): the routes
 * by the first segment of their prefix, each list longest first, so a request costs one map
 * lookup instead of a scan of every set's prefix. Same answers as `pickRoute`.
 */
export function indexRoutes(routes: readonly ProxyRoute[]): (url: string) => ProxyRoute {
  const sorted = byLongestPrefix(routes);
  // What pickRoute answers when no prefix matches: the route without a prefix, else the last.
  const last = sorted.find((r) => r.prefix === '') ?? sorted[sorted.length - 1]!;
  const bySegment = new Map<string, ProxyRoute[]>();
  for (const route of sorted) {
    if (route.prefix === '') continue;
    const key = firstSegment(route.prefix);
    bySegment.set(key, [...(bySegment.get(key) ?? []), route]);
  }
  // Each list ends with that route, so pickRoute over it answers as over all of them.
  for (const list of bySegment.values()) list.push(last);
  return (url) => {
    const candidates = bySegment.get(firstSegment(url));
    return candidates ? pickRoute(candidates, url) : last;
  };
}

/** `/objects-12/pub/x?y` → `/objects-12`. */
function firstSegment(path: string): string {
  let end = path.length;
  for (let i = 1; i < path.length; i++) {
    const c = path.charCodeAt(i);
    if (c === 47 /* / */ || c === 63 /* ? */) { end = i; break; }
  }
  return path.slice(0, end);
}

/** Headers some frameworks (Spring's HiddenHttpMethodFilter variants, ASP.NET, Rails) read as the real method. */
const METHOD_OVERRIDES = ['x-http-method-override', 'x-http-method', 'x-method-override'] as const;

/** Checks a request's target and method for its route: the path to send upstream, or why not. */
export function admit(route: ProxyRoute, url: string, method: string, headers: IncomingMessage['headers']): { path: string } | Refusal {
  const badTarget = checkRequestTarget(url);
  if (badTarget) return { status: 400, message: badTarget };
  if (route.methods && !route.methods.has(method)) {
    return { status: 405, message: `method ${method} not allowed on this route`, headers: { allow: [...route.methods].join(', ') } };
  }
  // An upstream that reflects TRACE would hand the attached token and ApiKey back to the client.
  // (TRACK never gets here: Node's parser answers unknown methods with 400.)
  // 501: refused for every resource (a 405 would owe an Allow header listing the others).
  if (method === 'TRACE' || overridesToTrace(headers)) return { status: 501, message: 'TRACE is not supported: it would reflect the credentials the sidecar attaches' };
  const path = upstreamPath(url, route.prefix);
  if (path !== url) {
    // Removing the prefix can expose a new start: `/l10n//evil.example/x` becomes `//evil.example/x`.
    const badPath = checkRequestTarget(path);
    if (badPath) return { status: 400, message: badPath };
  }
  return { path };
}

/** True when a method-override header asks for TRACE or TRACK (a service honouring it would reflect the credentials). */
function overridesToTrace(headers: IncomingMessage['headers']): boolean {
  for (const name of METHOD_OVERRIDES) {
    const value = headers[name];
    if (typeof value === 'string' && /^\s*tra(ce|ck)\s*$/i.test(value)) return true;
  }
  return false;
}

/** The path sent upstream: the route prefix removed, always starting with `/`. */
function upstreamPath(url: string, prefix: string): string {
  const rest = url.slice(prefix.length);
  if (rest === '') return '/';
  return rest.charCodeAt(0) === 63 /* ? */ ? `/${rest}` : rest;
}
