/**
 * Request headers never forwarded upstream: hop-by-hop headers (RFC 9110 §7.6.1), headers the
 * sidecar owns (Host, framing) and client-supplied forwarding headers, which the service might
 * use for its own IP allowlist (the API description: access may be restricted to allowed addresses and subnets) and which a local client must not forge.
 * `trailer` and `te` are dropped too: http-proxy crashes on `Trailer:` (node-http-proxy#1647).
 */
export const STRIPPED_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'expect',
  'forwarded',
  'x-forwarded-for',
  'x-forwarded-host',
  'x-forwarded-proto',
  'x-forwarded-port',
  'x-real-ip',
  // The sidecar's own: asks it to redact the answer (diagnostic-answer.ts); not the service's business.
  'b2b-sidecar-diagnostic',
]);

/** Response headers not passed back to the client (Node frames the response itself). */
export const STRIPPED_RESPONSE_HEADERS: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
]);

/**
 * Framing and routing headers a `Connection` header cannot remove: dropping Content-Length by
 * nomination left a body without framing, which the upstream read as a second request carrying
 * the next client's credentials (request smuggling). The sidecar decides these itself.
 */
const NOT_NOMINATABLE: ReadonlySet<string> = new Set(['content-length', 'transfer-encoding', 'host']);

/** Header names a `Connection` header nominates as hop-by-hop (lower-cased); undefined when none. */
export function connectionNominated(value: string | string[] | undefined): Set<string> | undefined {
  // The usual values nominate nothing but themselves; skip the parse on the hot path.
  if (value === undefined || value === 'keep-alive' || value === 'close') return undefined;
  const names = new Set<string>();
  for (const part of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const name = part.trim().toLowerCase();
    if (name && !NOT_NOMINATABLE.has(name)) names.add(name);
  }
  return names;
}
