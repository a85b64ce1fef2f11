import type { IncomingHttpHeaders } from 'node:http';

/**
 * How the simulated service expects the token on protected operations. The API description does
 * not say (config/b2b-auth.swagger.yaml documents only the ApiKey header), so the simulator can be set to accept exactly one presentation, which lets
 * `doctor --discover-attach` be tested end to end.
 */
export interface TokenPresentation {
  in: 'header' | 'query';
  /** Header name (lower-case) or query parameter name. */
  name: string;
  /** Header only: the scheme before the token (`Bearer`); undefined means the bare token. */
  scheme: string | undefined;
  /** The ApiKey header is required as well. */
  requireApiKey: boolean;
}

/** Today's default, what the sidecar attaches by default: `Authorization: Bearer <token>` plus `ApiKey`. */
export const DEFAULT_PRESENTATION: TokenPresentation = { in: 'header', name: 'authorization', scheme: 'Bearer', requireApiKey: true };

/** RFC 9110 token characters (header names, auth schemes) except `+`, which starts the `+apikey` suffix. */
const TOKEN_CHARS = /^[!#$%&'*.^_`|~0-9A-Za-z-]+$/;
const QUERY_NAME = /^[A-Za-z0-9_.~-]+$/;
export const TOKEN_IN_SYNTAX = 'header:NAME[:SCHEME][+apikey] or query:NAME[+apikey]';

/**
 * Parses `simulate --token-in`: `header:Authorization:Bearer`, `header:Authorization` (bare
 * token), `header:X-Auth-Token`, `query:token`; a `+apikey` suffix requires the ApiKey header too.
 *
 * @throws Error naming the syntax when `spec` does not match it.
 */
export function parseTokenIn(spec: string): TokenPresentation {
  const requireApiKey = /\+apikey$/i.test(spec);
  const body = requireApiKey ? spec.slice(0, -'+apikey'.length) : spec;
  const [where, name, scheme, ...rest] = body.split(':');
  const bad = new Error(`--token-in "${spec}" is not ${TOKEN_IN_SYNTAX}`);
  if (rest.length > 0 || !name) throw bad;
  if (where === 'header' && TOKEN_CHARS.test(name) && (scheme === undefined || TOKEN_CHARS.test(scheme))) {
    return { in: 'header', name: name.toLowerCase(), scheme: scheme || undefined, requireApiKey };
  }
  if (where === 'query' && QUERY_NAME.test(name) && scheme === undefined) {
    return { in: 'query', name, scheme: undefined, requireApiKey };
  }
  throw bad;
}

/** How to call a protected operation, for banners and 401 messages: `Authorization: Bearer <token>`. */
export function describePresentation(p: TokenPresentation): string {
  const where = p.in === 'query' ? `query parameter ${p.name}=<token>` : `header ${p.name}: ${p.scheme ? `${p.scheme} ` : ''}<token>`;
  return p.requireApiKey ? `${where} and header ApiKey` : where;
}

/** The token the request presents the expected way, or undefined. */
export function presentedToken(headers: IncomingHttpHeaders, query: URLSearchParams, p: TokenPresentation): string | undefined {
  if (p.in === 'query') {
    const values = query.getAll(p.name);
    // Two values are ambiguous; a real service might pick either, so accept neither.
    return values.length === 1 && values[0] !== '' ? values[0] : undefined;
  }
  const value = headers[p.name];
  if (typeof value !== 'string' || value === '') return undefined;
  if (!p.scheme) return value;
  const space = value.indexOf(' ');
  // The scheme is case-insensitive (RFC 9110 §11.1), the token is not.
  if (space < 0 || value.slice(0, space).toLowerCase() !== p.scheme.toLowerCase()) return undefined;
  const token = value.slice(space + 1).trim();
  return token === '' ? undefined : token;
}
