/**
 * The key the 401 judgement remembers a request by: what the service judges, the method, the path
 * and the query (docs/design.md, "Reading the answers"). The query is normalised so that one
 * request is one key however a client writes it: empty pairs dropped, pairs sorted, and the
 * parameters `token.attach` puts in the query removed (the sidecar strips a client's own and
 * appends its token, so they never reach the service as sent; names compared decoded and ignoring
 * case, as proxy/attach.ts strips them). Computed only on the rare paths: a 401, a judgement, a
 * success while a judgement is watched; never for an ordinary answer.
 */

/** Longest key kept whole; a longer one keeps its start and a hash of the whole (no two long keys share an entry by their start alone). */
export const MAX_KEY_CHARS = 256;
const KEPT_PREFIX = 240;

export type RequestKey = (method: string, path: string) => string;

/** The key function for a sidecar whose `token.attach` puts `ignored` (lower-case) in the query. */
export function requestKeyFunction(ignored: ReadonlySet<string>): RequestKey {
  return (method, path) => requestKey(method, path, ignored);
}

export function requestKey(method: string, path: string, ignored: ReadonlySet<string>): string {
  const q = path.indexOf('?');
  const key = q === -1 ? `${method} ${path}` : `${method} ${path.slice(0, q)}${normalQuery(path.slice(q + 1), ignored)}`;
  return key.length > MAX_KEY_CHARS ? `${key.slice(0, KEPT_PREFIX)}#${fnv1a(key)}` : key;
}

/** `?a=1&b=2` sorted, without empty pairs and ignored names; '' when nothing is left. */
function normalQuery(query: string, ignored: ReadonlySet<string>): string {
  if (query === '') return '';
  const kept: string[] = [];
  for (const pair of query.split('&')) {
    if (pair === '') continue;
    if (ignored.size > 0) {
      const eq = pair.indexOf('=');
      if (ignored.has(safeDecode(eq === -1 ? pair : pair.slice(0, eq)).toLowerCase())) continue;
    }
    kept.push(pair);
  }
  if (kept.length === 0) return '';
  kept.sort();
  return `?${kept.join('&')}`;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}

/** 32-bit FNV-1a, hex: enough to keep long keys apart (the key is a hint for a renewal, not a secret). */
function fnv1a(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16);
}
