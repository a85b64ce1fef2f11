/**
 * The path of a proxied request as the request log shows it: the path itself, and the query with
 * every value replaced by `***`. Deny by default: a query value may be an attached token
 * (`token.attach` in query form), a client's own key or a signature, and no list of names can tell
 * them all apart, while the names alone already say which request it was. An absolute-form target
 * (`GET http://user:pass@host/p`) is reduced to its path, so its user information never shows.
 */

/** Longer paths are cut here: a log line is no place for a 64 KiB target. */
export const MAX_LOGGED_PATH_CHARS = 512;

export function loggedPath(target: string): string {
  let text = target;
  if (!text.startsWith('/')) {
    try {
      const url = new URL(text);
      text = `${url.pathname}${url.search}`;
    } catch {
      return '(not a path)';
    }
  }
  const hash = text.indexOf('#');
  if (hash >= 0) text = text.slice(0, hash);
  const mark = text.indexOf('?');
  let shown = text;
  if (mark >= 0) {
    const query = text.slice(mark + 1).split('&').map((pair) => {
      const eq = pair.indexOf('=');
      return eq < 0 ? pair : `${pair.slice(0, eq)}=***`;
    });
    shown = `${text.slice(0, mark)}?${query.join('&')}`;
  }
  return shown.length > MAX_LOGGED_PATH_CHARS ? `${shown.slice(0, MAX_LOGGED_PATH_CHARS)}…` : shown;
}
