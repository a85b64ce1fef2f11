/**
 * Which credential set a request uses (docs/credential-sets.md), after the source guard: the
 * listener (a set's own serves only it), then the path prefix (the route `pickRoute` found), then
 * the `B2B-Credential` header from a source in that set's `headerAllow`, then the shared
 * listener's default set. Never another set's credentials as a fallback: a request that chooses
 * none where there is no default is answered 400. The header itself is stripped by every route
 * (stripped-names.ts); here it is only read. On the request path only when the header is present
 * or no route matched: the one-set path costs one property read.
 */
import type { IncomingMessage } from 'node:http';
import type { IpGuard } from '../shared/ip-guard.js';
import type { Refusal } from './admit.js';
import { isLocalSocket } from './listener/local-socket.js';
import type { ProxyRoute } from './proxy-route.js';
import { CREDENTIAL_HEADER } from './stripped-names.js';

/** A set the header may choose: its route without prefix, and who may choose it. */
export interface ChoosableSet {
  route: ProxyRoute;
  /** The set's `headerAllow` (with guard.trustedProxies); absent: no source may choose it by header. */
  headerAllow?: IpGuard;
}

/** What one listener's handler knows of the credential sets. */
export interface CredentialChoice {
  /** Every set by id (the header names one). */
  sets: ReadonlyMap<string, ChoosableSet>;
  /**
   * The route a request gets when it chooses no set and no prefix matched (`pickRoute`'s last):
   * the default set's, or a placeholder that answers 400 (no default).
   */
  unchosen?: ProxyRoute;
}

/** Same as the config's id rule (config/credential-sets-schema.ts): what may be echoed in an answer. */
const ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** What to tell a request that chose no set where there is no default. */
export const NO_SET_CHOSEN = 'no credential set chosen: use a set\'s own listener, its pathPrefix, or the B2B-Credential header from a source in its headerAllow';

/**
 * The route `route` (pickRoute's answer) becomes for this request, or the refusal: 400 for two
 * headers, an unknown id, a header contradicting the listener or prefix, or no choice without a
 * default; 403 for a source outside the named set's headerAllow.
 */
export function chooseCredential(choice: CredentialChoice, route: ProxyRoute, req: IncomingMessage): ProxyRoute | Refusal {
  const named = req.headers[CREDENTIAL_HEADER];
  if (named === undefined) {
    return route === choice.unchosen && route.credential === undefined ? { status: 400, message: NO_SET_CHOSEN } : route;
  }
  // Node joins repeated headers it does not know with ", "; an id has no comma.
  if (Array.isArray(named) || named.includes(',')) return { status: 400, message: 'send at most one B2B-Credential header' };
  const id = named.trim();
  const set = choice.sets.get(id);
  if (!set) return { status: 400, message: ID.test(id) ? `B2B-Credential names no credential set: "${id}"` : 'B2B-Credential is not a credential set id' };
  // The listener or the prefix already chose: the header may only agree (a route of another upstream, e.g. localization, ignores it).
  if (route.credential === id) return route;
  if (route.credential !== undefined && route !== choice.unchosen) {
    return { status: 400, message: `B2B-Credential names ${id}, but this ${route.prefix === '' ? 'listener' : 'path prefix'} serves the credential set ${route.credential}` };
  }
  if (route !== choice.unchosen && route.credential === undefined) return route;
  if (!set.headerAllow || !allowedSource(set.headerAllow, req)) return { status: 403, message: `this source may not choose the credential set ${id} (its headerAllow)` };
  return set.route;
}

function allowedSource(guard: IpGuard, req: IncomingMessage): boolean {
  // The unix socket has no address: its file mode is its guard, not a set's headerAllow.
  if (isLocalSocket(req.socket)) return false;
  return guard.allows(guard.clientAddress(req.socket.remoteAddress, req.headers['x-forwarded-for']));
}
