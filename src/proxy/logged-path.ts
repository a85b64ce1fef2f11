/**
 * The path of a proxied request as the request log shows it: the path itself, and the query with
 * every value replaced by `***` (an item without `=` is all value: `?SECRET` shows as `?***`). Path
 * parameters after `;` in a segment (`;jsessionid=…`) are masked the same way. Deny by default: a query value may be an attached token
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
  const path = (mark >= 0 ? text.slice(0, mark) : text).split('/').map((segment) => {
    const [name, ...parameters] = segment.split(';');
    return [name, ...parameters.map(masked)].join(';');
  }).join('/');
  const shown = mark >= 0 ? `${path}?${text.slice(mark + 1).split('&').map(masked).join('&')}` : path;
  return shown.length > MAX_LOGGED_PATH_CHARS ? `${shown.slice(0, MAX_LOGGED_PATH_CHARS)}…` : shown;
}

/** `name=***` for `name=value`, `***` for an item without `=`; an empty item stays empty. */
function masked(item: string): string {
  if (item === '') return item;
  const eq = item.indexOf('=');
  return eq < 0 ? '***' : `${item.slice(0, eq)}=***`;
}
