/**
 * Rewrites a response's `Location` that points at an upstream (the localization server, or the
 * service under a credential set's pathPrefix: docs/credential-sets.md) so that a client
 * following it stays on the sidecar's route: Weblate answers a URL without its trailing slash
 * with `301 Location: /api/translations/p/c/de/` (Django's APPEND_SLASH), which, passed back
 * unchanged through `/l10n`, lands the client on the B2B route.
 *
 * - an absolute path (`/api/...`) or an absolute URL on the server's origin (`https://l10n.example/api/...`)
 *   becomes `{prefix}{path}`; when `baseUrl` has a path (`https://host/weblate`), it must start
 *   with that path, which is replaced by the prefix;
 * - anything else (another origin, a path outside the server's base path, a relative reference,
 *   which the client already resolves under the prefix) is returned unchanged.
 */
export function createLocationRewrite(baseUrl: string, prefix: string): (location: string) => string {
  const base = new URL(baseUrl);
  const basePath = base.pathname.replace(/\/+$/, '');

  return function rewriteLocation(location: string): string {
    const raw = serverPath(location, base);
    if (raw === undefined) return location;
    // `/../pub/x` under the prefix would still resolve, in the client, to `/pub/x`: the B2B route.
    const path = withoutDotSegments(raw);
    if (basePath === '') return prefix + path;
    if (path === basePath) return `${prefix}/`;
    const next = path.charAt(basePath.length);
    if (path.startsWith(basePath) && (next === '/' || next === '?' || next === '#')) {
      return prefix + (next === '/' ? '' : '/') + path.slice(basePath.length);
    }
    return location;
  };
}

const ABSOLUTE_URL = /^([a-z][a-z0-9+.-]*:)?\/\/[^/?#]*/i;

/** The path (with query and fragment, as sent) of a Location on `base`'s origin, else undefined. */
function serverPath(location: string, base: URL): string | undefined {
  if (location.startsWith('/') && !location.startsWith('//')) return location;
  const authority = ABSOLUTE_URL.exec(location);
  if (!authority) return undefined;
  let target: URL;
  try {
    target = new URL(location, base); // `//host/x` takes the server's scheme
  } catch {
    return undefined;
  }
  if (target.origin !== base.origin) return undefined;
  // The raw rest, not target.pathname: URL parsing would resolve `..` and re-encode the path.
  const rest = location.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

const DOT_SEGMENT = /(^|\/)(\.|%2e){1,2}(\/|$|\?|#)/i;

/** The path with `.` and `..` segments resolved (as a client would), when it has any; else as sent. */
function withoutDotSegments(path: string): string {
  const end = path.search(/[?#]/);
  if (!DOT_SEGMENT.test(end === -1 ? path : path.slice(0, end))) return path;
  const resolved = new URL(path, 'http://resolve.invalid');
  return resolved.pathname + resolved.search + resolved.hash;
}
