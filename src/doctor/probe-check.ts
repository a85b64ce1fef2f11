import { compileAttachments, rewriteCookie, rewriteQuery, type AttachVars } from '../proxy/attach.js';
import type { Attachment } from '../config/schema.js';
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
}

/** What the service answered to one probe GET. */
export interface ProbeAnswer {
  status: number;
  /** The ErrorMessage `message`, if the body was one. */
  message?: string;
  /** A redirect's target (not followed), without its query. */
  location?: string;
}

const MAX_BODY = 16 * 1024;
const MAX_MESSAGE = 200;

/**
 * One GET with `attach` applied exactly as the proxy applies it (attach.ts: headers set, query
 * parameters and cookies replaced). Bodiless, so it is safe to repeat; redirects are never followed.
 */
export async function probeWith(target: ProbeTarget, attach: readonly Attachment[]): Promise<ProbeAnswer> {
  const compiled = compileAttachments(attach);
  const prepared = compiled.prepare(target.vars);
  const headers: Record<string, string> = { accept: 'application/json' };
  for (const [name, value] of prepared.headers) headers[name] = value;
  const cookie = rewriteCookie(undefined, compiled.cookieNames, prepared.cookie);
  if (cookie) headers.cookie = cookie;
  const res = await target.engine.send({
    method: 'GET',
    path: rewriteQuery(target.path, compiled.queryNames, prepared.query),
    headers,
    body: undefined,
    signal: new ClientGone(),
  });
  const body = await res.body.readAll(MAX_BODY).catch(() => undefined);
  const answer: ProbeAnswer = { status: res.status };
  const message = body && errorMessage(body.toString('utf8'));
  if (message) answer.message = message;
  const location = res.headers.location;
  if (res.status >= 300 && res.status < 400 && typeof location === 'string') answer.location = withoutQuery(location, target.base);
  return answer;
}

/** Step 4: the probe through the configured `token.attach`. */
export async function checkProbe(target: ProbeTarget, attach: readonly Attachment[], discovering: boolean): Promise<DoctorStep> {
  const url = `${target.base}${target.path}`;
  let answer: ProbeAnswer;
  try {
    answer = await probeWith(target, attach);
  } catch (err) {
    return { step: 'probe', ok: false, url, detail: `GET ${url} failed: ${(err as { code?: string }).code ?? (err as Error).message}`, hint: 'the service did not answer the probe; retry, or check service.timeoutMs' };
  }
  const { status } = answer;
  const said = answer.message ? `: ${answer.message}` : '';
  const base = { step: 'probe' as const, url, status, detail: `GET ${url} with token.attach → ${status}${said}` };
  if (status === 401 || status === 403) {
    return { ...base, ok: false, hint: discovering ? 'the service does not accept the token as attached: see discover-attach below' : 'the service does not accept the token as attached: try --discover-attach' };
  }
  if (status === 404) return { ...base, ok: false, hint: '--probe names no operation the service knows: use a harmless GET you know exists (e.g. an object lookup), relative to service.baseUrl' };
  if (status >= 300 && status < 400) {
    return { ...base, ok: false, detail: `${base.detail} (redirect to ${answer.location ?? 'nowhere given'}, not followed)`, hint: 'the sidecar passes redirects back to the app; probe a path that answers directly' };
  }
  if (status >= 500) return { ...base, ok: false, hint: 'the service failed: retry later, or tell the support team' };
  return { ...base, ok: true };
}

function errorMessage(text: string): string | undefined {
  try {
    const body: unknown = JSON.parse(text);
    const message = (body as { message?: unknown } | null)?.message;
    if (typeof message === 'string') return message.replace(/[\x00-\x1f\x7f]+/g, ' ').trim().slice(0, MAX_MESSAGE) || undefined;
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
