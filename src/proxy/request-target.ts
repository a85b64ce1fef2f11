/**
 * Checks a request target before anything routes on it (docs/traps.md T8). Only origin-form targets
 * with a normalised path are accepted: no absolute-form (`http://other/x`), no `//host/x`,
 * no dot segments, raw or percent-encoded, and no encoded slashes or backslashes, which some
 * servers decode into path separators. Matrix parameters count as part of the segment they
 * follow: Tomcat, Jetty and Spring read `..;x` as `..` and `/;x/host` as `//host`.
 * Returns undefined when acceptable, else the reason.
 */
export function checkRequestTarget(url: string): string | undefined {
  if (url.charCodeAt(0) !== 47 /* / */) {
    return /^[a-z][a-z0-9+.-]*:\/\//i.test(url)
      ? 'absolute-form request targets are not accepted: this is not a forward proxy'
      : 'request target must be an absolute path';
  }
  if (url.charCodeAt(1) === 47) return 'request path must not start with //';
  // A fragment never leaves the client: one in the target would put query attachments after it.
  if (url.includes('#')) return 'a request target must not contain # (a fragment stays with the client)';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  // Fast path: the common case has no percent signs, dots or semicolons after slashes, or backslashes.
  if (!/%|\/[.;]|\\/.test(path)) return undefined;
  if (/%(2f|5c|00)/i.test(path) || path.includes('\\')) return 'encoded slashes and backslashes are not accepted in the path';
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return 'malformed percent-encoding in the path';
  }
  const segments = decoded.split('/');
  for (let i = 1; i < segments.length; i++) {
    const segment = segments[i]!;
    const semicolon = segment.indexOf(';');
    const name = semicolon === -1 ? segment : segment.slice(0, semicolon);
    if (name === '.' || name === '..') return 'dot segments are not accepted in the path';
    if (i === 1 && name === '') return 'request path must not start with // (nor with a parameter-only segment)';
  }
  return undefined;
}
