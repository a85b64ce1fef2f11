/**
 * `WWW-Authenticate` as RFC 9110 §11.6.1 defines it: one or more challenges, each an auth-scheme
 * followed by a token68 or by comma-separated auth-params (`name=token` or `name="quoted"`).
 * RFC 6750 §3 adds `error`, `error_description` and `scope` for Bearer. Liberal: anything that
 * does not parse ends the list instead of failing, since this only guides discovery and is shown
 * to the operator.
 */
export interface Challenge {
  /** As sent (schemes are case-insensitive: compare lower-cased). */
  scheme: string;
  /** Parameter names lower-cased; values unquoted. */
  params: Record<string, string>;
  token68?: string;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*/;
const PARAM = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*=(?!=)[ \t]*(?=["!#$%&'*+.^_`|~0-9A-Za-z-])/;

/** Every challenge in the header (or headers, when sent more than once). */
export function parseChallenges(header: string | readonly string[] | undefined): Challenge[] {
  if (header === undefined) return [];
  const out: Challenge[] = [];
  for (const value of typeof header === 'string' ? [header] : header) out.push(...parseOne(value));
  return out;
}

function parseOne(input: string): Challenge[] {
  const out: Challenge[] = [];
  let rest = input;
  const skip = (re: RegExp) => {
    rest = rest.replace(re, '');
  };
  skip(/^[\s,]+/);
  while (rest.length > 0) {
    const scheme = TOKEN.exec(rest)?.[0];
    if (!scheme) break;
    rest = rest.slice(scheme.length);
    const challenge: Challenge = { scheme, params: {} };
    out.push(challenge);
    skip(/^[ \t]+/);
    // Either auth-params (name = value, ...) or one token68, or nothing before the next challenge.
    // `name=value` starts auth-params; `abc=` or `abc==` before a comma or the end is a token68.
    const param = PARAM.exec(rest);
    if (!param) {
      const t68 = TOKEN68.exec(rest)?.[0];
      if (t68 && /^[\s,]*$|^[ \t]*,/.test(rest.slice(t68.length))) {
        challenge.token68 = t68;
        rest = rest.slice(t68.length);
      }
      skip(/^[\s,]+/);
      continue;
    }
    // auth-params until something that is not one: the next scheme starts there.
    for (;;) {
      const m = PARAM.exec(rest);
      if (!m) break;
      rest = rest.slice(m[0].length);
      let value: string;
      if (rest.startsWith('"')) {
        const q = /^"((?:[^"\\]|\\.)*)"/.exec(rest);
        if (!q) return out; // an unterminated quote: stop here
        value = q[1]!.replace(/\\(.)/g, '$1');
        rest = rest.slice(q[0].length);
      } else {
        value = TOKEN.exec(rest)?.[0] ?? '';
        rest = rest.slice(value.length);
      }
      challenge.params[m[1]!.toLowerCase()] = value;
      skip(/^[ \t]*/);
      if (!rest.startsWith(',')) break;
      skip(/^[\s,]+/);
      // A token not followed by `=value` is the next challenge's scheme.
      if (!PARAM.test(rest)) break;
    }
    skip(/^[\s,]+/);
  }
  return out;
}

/** One line for the operator: `Bearer realm="api", error="invalid_token"`. */
export function formatChallenge(c: Challenge): string {
  const params = Object.entries(c.params).map(([k, v]) => `${k}="${v.replace(/["\\]/g, '\\$&')}"`);
  return [c.scheme, c.token68, params.join(', ')].filter(Boolean).join(' ');
}
