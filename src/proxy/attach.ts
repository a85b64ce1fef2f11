import { placeOf, unhandledAttachmentKind, type Attachment } from '../shared/attachment.js';

/** Values the attachment templates may use. */
export interface AttachVars {
  token: string;
  apiKey: string;
  rkObjectId?: string | undefined;
}

/** Attachments resolved for one token generation: computed once, applied to every request. */
export interface PreparedAttachments {
  /** [lower-case name, value] pairs to set as request headers. */
  readonly headers: ReadonlyArray<readonly [string, string]>;
  /** `name=value` pairs, already URL-encoded, appended to the query string. */
  readonly query: string;
  /** `name=value` pairs joined with `; `, appended to the Cookie header. */
  readonly cookie: string;
  /**
   * What a kind computed from the templates' values that does not hold them verbatim (the base64
   * of `user:password`), so scrubbing the token and the ApiKey would miss it. Whoever prepares
   * registers these for redaction: the route's credentials with every token
   * (route-credentials.ts), doctor's probe in what it shows. A value that holds the secrets
   * verbatim (`Bearer {token}`, URL-encoded or not) is scrubbed through them and is not listed.
   * test/proxy/attach-secrets.test.ts checks this for every kind. Always present from
   * {@link compileAttachments}; credentials built by hand (the localization route's) derive nothing.
   */
  readonly secrets?: readonly string[];
}

/** Compiled attachment list: the names to strip from client requests and a `prepare` step. */
export interface CompiledAttachments {
  /** Lower-case header names the sidecar sets; client-sent values are removed first. */
  readonly headerNames: ReadonlySet<string>;
  /** Lower-case: client parameters and cookies are stripped whatever their case (a server may ignore it). */
  readonly queryNames: ReadonlySet<string>;
  readonly cookieNames: ReadonlySet<string>;
  prepare(vars: AttachVars): PreparedAttachments & { readonly secrets: readonly string[] };
}

const PLACEHOLDER = /\{(token|apiKey|rkObjectId)\}/g;

/**
 * Compiles `token.attach` once at start-up. Templates are split into literal and variable parts
 * so a renewal only re-joins strings; nothing is parsed per request.
 */
export function compileAttachments(entries: readonly Attachment[]): CompiledAttachments {
  const names = { header: new Set<string>(), query: new Set<string>(), cookie: new Set<string>() };
  for (const entry of entries) {
    const place = placeOf(entry);
    names[place.in].add(place.name.toLowerCase());
  }
  const { header: headerNames, query: queryNames, cookie: cookieNames } = names;
  return {
    headerNames,
    queryNames,
    cookieNames,
    prepare(vars) {
      const headers: Array<readonly [string, string]> = [];
      const query: string[] = [];
      const cookie: string[] = [];
      const secrets: string[] = [];
      const fill = (template: string): string => template.replace(PLACEHOLDER, (_, name: keyof AttachVars) => vars[name] ?? '');
      /** A value computed from filled templates (not a copy of them): registered for redaction. */
      const derived = (value: string): string => {
        secrets.push(value);
        return value;
      };
      for (const entry of entries) {
        switch (entry.in) {
          case 'header': headers.push([entry.name.toLowerCase(), fill(entry.value)]); break;
          case 'query': query.push(`${encodeURIComponent(entry.name)}=${encodeURIComponent(fill(entry.value))}`); break;
          case 'cookie': cookie.push(`${entry.name}=${encodeURIComponent(fill(entry.value))}`); break;
          // RFC 7617: UTF-8, then base64; its base64 holds neither secret verbatim.
          case 'basic': headers.push(['authorization', `Basic ${derived(Buffer.from(`${fill(entry.user)}:${fill(entry.password)}`).toString('base64'))}`]); break;
          default: unhandledAttachmentKind(entry);
        }
      }
      return { headers, query: query.join('&'), cookie: cookie.join('; '), secrets };
    },
  };
}

/**
 * Returns `path` (origin-form, may have a query) with every client parameter named in `names`
 * (lower-case) removed and `append` added. Parameter names are compared after decoding and
 * ignoring case, so neither `%72kObjectId` nor `TOKEN` can sneak a second value past the filter
 * to a server that decodes or ignores case.
 */
export function rewriteQuery(path: string, names: ReadonlySet<string>, append: string): string {
  const q = path.indexOf('?');
  if (names.size === 0 && append === '') return path;
  const base = q === -1 ? path : path.slice(0, q);
  const kept: string[] = [];
  if (q !== -1) {
    for (const pair of path.slice(q + 1).split('&')) {
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const rawName = eq === -1 ? pair : pair.slice(0, eq);
      if (!names.has(safeDecode(rawName).toLowerCase())) kept.push(pair);
    }
  }
  if (append) kept.push(append);
  return kept.length ? `${base}?${kept.join('&')}` : base;
}

/** Returns the Cookie header with client cookies named in `names` (lower-case, compared ignoring case) removed and `append` added. */
export function rewriteCookie(
  header: string | undefined,
  names: ReadonlySet<string>,
  append: string,
): string | undefined {
  const kept: string[] = [];
  if (header) {
    for (const part of header.split(';')) {
      const pair = part.trim();
      if (pair === '') continue;
      const eq = pair.indexOf('=');
      const name = (eq === -1 ? pair : pair.slice(0, eq)).trim();
      if (!names.has(name.toLowerCase())) kept.push(pair);
    }
  }
  if (append) kept.push(append);
  return kept.length ? kept.join('; ') : undefined;
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}
