import { compileAttachments, rewriteCookie, rewriteQuery, type AttachVars } from '../proxy/attach.js';
import type { Attachment } from '../config/schema.js';
import { SecretSet } from '../shared/secrets.js';
import { DIAGNOSTIC_BODY_DROPPED, DIAGNOSTIC_HEADER, DIAGNOSTIC_REDACTED } from '../proxy/diagnostic-answer.js';
import { ClientGone, type ProxyEngine } from '../upstream/engine.js';
import type { DoctorStep } from './doctor-report.js';

/** What a probe needs: the engine to the service, the path under baseUrl and the attach values. */
export interface ProbeTarget {
  engine: ProxyEngine;
  /** Origin-form path relative to `service.baseUrl` (`--probe`). */
  path: string;
  /** `service.baseUrl` without a trailing slash, for printing the URL called. */
  base: string;
  vars: AttachVars;
  /** Scrubs every secret from text the service sent back (run before anything is cut). */
  redact: (text: string) => string;
  /**
   * Through a running sidecar: ask it to scrub the token it attached (which doctor never sees)
   * from the answer it relays, and show nothing of an answer it did not confirm as scrubbed
   * (proxy/diagnostic-answer.ts; docs/security.md).
   */
  viaSidecar?: boolean;
  /** Through a running sidecar of several credential sets: how the request chooses its set (doctor/set-reach.ts). */
  choose?: { prefix: string; headers: Readonly<Record<string, string>> };
}

/** What the service answered to one probe GET. */
export interface ProbeAnswer {
  status: number;
  /** The ErrorMessage `message`, if the body was one (redacted, then cut). */
  message?: string;
  /** The start of the body on one line (redacted, then cut), for the operator and the support team. */
  excerpt?: string;
  /** `WWW-Authenticate` as sent. */
  challenge?: string;
  /** A redirect's target (not followed), without its query. */
  location?: string;
  /** `Retry-After` as sent (a 429, a 503): the service asks to come back later. */
  retryAfter?: string;
  /** Why nothing of the answer but its status is shown (a sidecar that did not redact it). */
  withheld?: string;
}

const MAX_BODY = 16 * 1024;
const MAX_MESSAGE = 200;
const MAX_EXCERPT = 160;

/**
 * One GET with `attach` applied exactly as the proxy applies it (attach.ts: headers set, query
 * parameters and cookies replaced). Bodiless, so it is safe to repeat; redirects are never followed.
 */
export async function probeWith(target: ProbeTarget, attach: readonly Attachment[]): Promise<ProbeAnswer> {
  const compiled = compileAttachments(attach);
  const prepared = compiled.prepare(target.vars);
  // What the attachments derived from the secrets (a Basic pair's base64) is scrubbed, with every
  // piece of it, from what this probe shows, beside the secrets `target.redact` knows.
  const derived = new SecretSet();
  for (const value of prepared.secrets) derived.addToken(value);
  const redact = (text: string): string => derived.redactFragments(target.redact(text));
  const headers: Record<string, string> = { accept: 'application/json', ...target.choose?.headers };
  if (target.viaSidecar) headers[DIAGNOSTIC_HEADER] = '1';
  for (const [name, value] of prepared.headers) headers[name] = value;
  const cookie = rewriteCookie(undefined, compiled.cookieNames, prepared.cookie);
  if (cookie) headers.cookie = cookie;
  const res = await target.engine.send({
    method: 'GET',
    path: `${target.choose?.prefix ?? ''}${rewriteQuery(target.path, compiled.queryNames, prepared.query)}`,
    headers,
    body: undefined,
    signal: new ClientGone(),
  });
  const answer: ProbeAnswer = { status: res.status };
  if (target.viaSidecar) {
    const said = res.headers[DIAGNOSTIC_HEADER];
    if (said !== DIAGNOSTIC_REDACTED) {
      res.body.destroy();
      answer.withheld = said === DIAGNOSTIC_BODY_DROPPED
        ? 'the answer was too large or compressed for the running sidecar to redact; only its status is shown'
        : 'the running sidecar did not confirm that it removed the token it attached from the answer (an older version?); only the status is shown';
      return answer;
    }
  }
  const body = await res.body.readAll(MAX_BODY).catch(() => undefined);
  // Redacted before anything is cut: a cut first can leave a prefix of an echoed token.
  const text = body ? redact(body.toString('utf8')) : '';
  const message = text && errorMessage(text);
  if (message) answer.message = message;
  const excerpt = oneLine(text).slice(0, MAX_EXCERPT);
  if (excerpt) answer.excerpt = excerpt;
  const challenge = res.headers['www-authenticate'];
  if (challenge !== undefined) answer.challenge = oneLine(redact(Array.isArray(challenge) ? challenge.join(', ') : challenge)).slice(0, MAX_EXCERPT);
  const retryAfter = res.headers['retry-after'];
  if (typeof retryAfter === 'string') answer.retryAfter = oneLine(redact(retryAfter)).slice(0, 40);
  const location = res.headers.location;
  if (res.status >= 300 && res.status < 400 && typeof location === 'string') answer.location = redact(withoutQuery(location, target.base));
  return answer;
}

function oneLine(text: string): string {
  return text.replace(/[\x00-\x1f\x7f]+/g, ' ').replace(/\s+/g, ' ').trim();
}

/**
 * Step 4: the probe through the configured `token.attach`. Only a 2xx passes: any 4xx may be the
 * service refusing the token in its own way (a missing header is a 400 in Spring, an unknown
 * token a 404 on some APIs), which is what discover-attach then tells apart. `via` says how the
 * token travelled (through a running sidecar, `attach` is empty: the sidecar attaches its own).
 */
export async function checkProbe(target: ProbeTarget, attach: readonly Attachment[], discovering: boolean, via = 'with token.attach'): Promise<DoctorStep & { answer?: ProbeAnswer }> {
  const url = `${target.base}${target.path}`;
  let answer: ProbeAnswer;
  try {
    answer = await probeWith(target, attach);
  } catch (err) {
    return { step: 'probe', ok: false, url, detail: `GET ${url} failed: ${(err as { code?: string }).code ?? (err as Error).message}`, hint: 'the service did not answer the probe; retry, or check service.timeoutMs' };
  }
  const { status } = answer;
  const said = answer.message ? `: ${answer.message}` : answer.excerpt ? `: ${answer.excerpt}` : answer.withheld ? ` (${answer.withheld})` : '';
  const base = { step: 'probe' as const, url, status, answer, detail: `GET ${url} ${via} → ${status}${said}` };
  const next = discovering ? 'see discover-attach below' : 'try --discover-attach';
  if (status >= 200 && status < 300) return { ...base, ok: true };
  if (status === 423) return { ...base, ok: false, hint: 'the service reports the key or the resource as locked: ask the support team to unlock it before anything else runs against the service' };
  // A 2xx has returned above: a Retry-After here comes with a refusal.
  if (status === 429 || answer.retryAfter !== undefined) {
    return { ...base, ok: false, detail: `${base.detail}${answer.retryAfter !== undefined ? ` (Retry-After: ${answer.retryAfter})` : ''}`, hint: 'the service asks to slow down: wait, then run doctor again' };
  }
  if (status === 401 || status === 403) return { ...base, ok: false, hint: `the service does not accept the token as attached: ${next}` };
  if (status === 404) {
    return { ...base, ok: false, hint: `either --probe names nothing that exists (use a harmless GET you know exists, e.g. an object lookup, relative to service.baseUrl) or the service answers 404 for a token it does not accept: ${next}` };
  }
  if (status >= 300 && status < 400) {
    return { ...base, ok: false, detail: `${base.detail} (redirect to ${answer.location ?? 'nowhere given'}, not followed)`, hint: `a redirect (to a login page?) instead of an answer: the token may not be accepted: ${next}` };
  }
  if (status >= 500) return { ...base, ok: false, hint: 'the service failed: retry later, or tell the support team' };
  return { ...base, ok: false, hint: `the service refused the probe (a 4xx may mean a missing or misplaced token): ${next}` };
}

function errorMessage(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    const record = body as { message?: unknown; detail?: unknown; error?: unknown } | null;
    // ErrorMessage (the API description), Django REST framework's `detail`, or a bare `error`.
    const message = [record?.message, record?.detail, record?.error].find((m) => typeof m === 'string');
    if (typeof message === 'string') return oneLine(message).slice(0, MAX_MESSAGE) || undefined;
  } catch {
    // not an ErrorMessage
  }
  return undefined;
}

function withoutQuery(location: string, base: string): string {
  try {
    const to = new URL(location, `${base}/`);
    return `${to.origin}${to.pathname}`;
  } catch {
    return 'an invalid address';
  }
}
