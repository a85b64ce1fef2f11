import { stringify } from 'yaml';
import type { Attachment } from '../config/schema.js';
import { describeAttachment, isNamedAttachment, type NamedAttachment } from '../shared/attachment.js';
import type { DoctorStep, DiscoveryResult, TriedPresentation } from './doctor-report.js';
import { probeWith, type ProbeAnswer, type ProbeTarget } from './probe-check.js';
import { formatChallenge, parseChallenges, type Challenge } from './www-authenticate.js';
import { haltOf, haltStep, type Halt } from './discovery-halt.js';

/**
 * How the token might travel. The API description documents only the ApiKey header, so these
 * are the presentations common server stacks use: `Authorization` with the schemes of RFC 6750
 * (Bearer) and Django REST framework (Token) or none, the header names API gateways and
 * frameworks use, RFC 6750 §2.3's `access_token` query parameter and its neighbours, and cookies.
 */
export const STANDARD_PRESENTATIONS: readonly NamedAttachment[] = [
  { in: 'header', name: 'Authorization', value: 'Bearer {token}' },
  { in: 'header', name: 'Authorization', value: 'Token {token}' },
  { in: 'header', name: 'Authorization', value: '{token}' },
  ...['AuthToken', 'Token', 'X-Auth-Token', 'X-Access-Token', 'X-API-Token', 'X-Token', 'Access-Token']
    .map((name) => ({ in: 'header' as const, name, value: '{token}' })),
  ...['token', 'access_token', 'auth_token'].map((name) => ({ in: 'query' as const, name, value: '{token}' })),
  ...['token', 'AuthToken', 'access_token'].map((name) => ({ in: 'cookie' as const, name, value: '{token}' })),
];
export const API_KEY: NamedAttachment = { in: 'header', name: 'ApiKey', value: '{apiKey}' };
const RK_OBJECT_ID: NamedAttachment = { in: 'header', name: 'rkObjectId', value: '{rkObjectId}' };

/** Discovery stops here whatever is left: it must stay a polite visitor. */
export const MAX_DISCOVERY_REQUESTS = 60;
/** Default pace: a few requests per second. */
export const DEFAULT_DISCOVERY_RATE = 4;

/** `Authorization: Bearer {token}`, `?access_token={token}`, `Cookie token={token}`. */
export const presentationLabel = (a: Attachment): string => describeAttachment(a);

/**
 * Parses a `--try` guess: `header:NAME:VALUE`, `query:NAME:VALUE` or `cookie:NAME:VALUE`, where
 * VALUE is a template carrying `{token}` (it may contain further colons). A string is a problem.
 */
export function parseTry(spec: string): NamedAttachment | string {
  const m = /^(header|query|cookie):([^:]+):(.+)$/.exec(spec);
  if (!m) return `"${spec}" is not KIND:NAME:VALUE (KIND header, query or cookie), e.g. header:X-Access-Token:{token}`;
  const [, kind, name, value] = m as unknown as [string, 'header' | 'query' | 'cookie', string, string];
  if (!value.includes('{token}')) return `"${spec}": the value must carry {token}`;
  return { in: kind, name: name.trim(), value } as NamedAttachment;
}

/** What the service said without a token: the evidence every candidate is judged against. */
interface Baseline {
  none: ProbeAnswer;
  unknownToken: ProbeAnswer;
}

/** Options of {@link discoverAttach}. */
export interface DiscoveryOptions {
  /** `--try` guesses: tried instead of the standard list, all of them (so ambiguity shows). */
  guesses?: readonly Attachment[];
  /** Requests per second (pacing); Infinity or 0 = no pause. */
  rate: number;
  /** Waits between requests; injected by tests. */
  sleep?: (ms: number) => Promise<void>;
  maxRequests?: number;
  /**
   * The token "the service never issued" for the baseline and the decoys: `unknownToken` of the
   * real one (decoy-token.ts), registered for redaction by the caller like every secret.
   */
  decoyToken: string;
}

/** Thrown inside discovery to stop at the first answer that asks for it. */
class Stop {
  constructor(readonly halt: Halt, readonly answer: ProbeAnswer) {}
}

/**
 * Step 5: finds how the service wants the token, by evidence. First a baseline (the probe path
 * with no token, and with a well-formed token the service never issued); a path that answers
 * either with 2xx needs no token, and nothing can be concluded there. Then each candidate,
 * pointed-at ones first (the `WWW-Authenticate` scheme, a header the error body names): a
 * presentation is established only when the real token gets a 2xx where the baseline did not,
 * **and** the same presentation with an unknown token does not (a service that lets any value
 * through is not checking that header). The ApiKey goes only where it is needed: every candidate
 * is tried without it first, and with it only when none passed without (one more request adds it
 * to a presentation found without, to check the block as pasted). GET only, redirects never
 * followed, paced, at most {@link MAX_DISCOVERY_REQUESTS} requests, and stopped at the first 423,
 * 429 or `Retry-After` ({@link haltOf}); the password is never sent.
 */
export async function discoverAttach(target: ProbeTarget, options: DiscoveryOptions): Promise<DoctorStep> {
  const url = `${target.base}${target.path}`;
  const max = options.maxRequests ?? MAX_DISCOVERY_REQUESTS;
  const pauseMs = options.rate > 0 && Number.isFinite(options.rate) ? 1000 / options.rate : 0;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const tried: TriedPresentation[] = [];
  let sent = 0;
  const fake = { ...target, vars: { ...target.vars, token: options.decoyToken } };
  /** One GET; an answer asking to stop throws {@link Stop}, a failure without an answer is its code. */
  const probe = async (t: ProbeTarget, attach: readonly Attachment[], label?: string): Promise<ProbeAnswer | string> => {
    if (sent > 0 && pauseMs > 0) await sleep(pauseMs);
    sent++;
    let answer: ProbeAnswer;
    try {
      answer = await probeWith(t, attach);
    } catch (err) {
      return (err as { code?: string }).code ?? (err as Error).message;
    }
    const halt = haltOf(answer);
    if (halt) {
      if (label) tried.push({ label, status: answer.status, ...(answer.message ?? answer.excerpt ? { excerpt: answer.message ?? answer.excerpt } : {}) });
      throw new Stop(halt, answer);
    }
    return answer;
  };
  const step = (result: DiscoveryResult, ok: boolean, detail: string, extra: Partial<DoctorStep> = {}): DoctorStep => ({
    step: 'discover-attach', ok, url, result, detail: `${detail} (${sent} requests)`, tried, accepted: [], ...extra,
  });
  try {
    return await discover();
  } catch (err) {
    if (err instanceof Stop) return haltStep(err.halt, err.answer, url, sent, { tried });
    throw err;
  }

  async function discover(): Promise<DoctorStep> {
    const none = await probe(target, []);
    if (typeof none === 'string') return noAnswer(none);
    // Without the ApiKey: a token the service never issued, sent with the key, may count against it.
    const unknown = await probe(fake, [{ in: 'header', name: 'Authorization', value: 'Bearer {token}' }]);
    if (typeof unknown === 'string') return noAnswer(unknown);
    const baseline: Baseline = { none, unknownToken: unknown };
    const baselineInfo = describeBaseline(baseline);
    if (isSuccess(none.status) || isSuccess(unknown.status)) {
      return step('cannot-tell', false, `GET ${url} answers ${isSuccess(none.status) ? none.status : unknown.status} without a valid token: this path needs no token, so nothing can be concluded`, {
        hint: 'choose a --probe path that needs the token (one the service refuses without it)', baseline: baselineInfo,
      });
    }

    const challenges = [...parseChallenges(none.challenge), ...parseChallenges(unknown.challenge)];
    const asksForObject = /rk_?object_?id/i.test(`${none.excerpt ?? ''} ${unknown.excerpt ?? ''}`) && target.vars.rkObjectId !== undefined;
    const extras = asksForObject ? [RK_OBJECT_ID] : [];
    const guessing = options.guesses !== undefined && options.guesses.length > 0;
    // Discovery tries named presentations only (parseTry makes no other kind), and says so in its result.
    const candidates = guessing ? options.guesses!.filter(isNamedAttachment) : orderCandidates(challenges, [none, unknown]);
    const established: Array<{ attach: NamedAttachment[]; label: string }> = [];

    /** Tries one presentation with or without the ApiKey; true when established, undefined over budget. */
    const judge = async (p: NamedAttachment, withApiKey: boolean): Promise<boolean | undefined> => {
      if (sent + 2 > max) return undefined;
      const attach = [p, ...(withApiKey ? [API_KEY] : []), ...extras];
      const label = `${presentationLabel(p)}${withApiKey ? ' + ApiKey' : ' without ApiKey'}`;
      const answer = await probe(target, attach, label);
      if (typeof answer === 'string') {
        tried.push({ label, error: answer });
        return false;
      }
      const entry = triedEntry(label, answer);
      tried.push(entry);
      if (!isSuccess(answer.status)) return false;
      // The real token passed: the same presentation with a token never issued must not.
      const decoy = await probe(fake, attach);
      if (typeof decoy !== 'string' && isSuccess(decoy.status)) {
        entry.note = `an unknown token is accepted too (${decoy.status}): not evidence`;
        return false;
      }
      entry.established = true;
      return true;
    };

    for (const p of candidates) {
      const ok = await judge(p, false);
      if (ok === undefined) break;
      if (!ok) continue;
      established.push({ attach: [p, ...extras], label: presentationLabel(p) });
      if (!guessing) break;
    }
    if (established.length === 1) {
      // The API description asks for the ApiKey on every operation: keep it in the block if the
      // service takes the request with it (one request, with the real token).
      const found = established[0]!;
      const label = `${found.label} + ApiKey`;
      if (sent + 1 <= max) {
        const withKey = [found.attach[0]!, API_KEY, ...extras];
        const answer = await probe(target, withKey, label);
        if (typeof answer === 'string') tried.push({ label, error: answer });
        else {
          const entry = triedEntry(label, answer);
          if (isSuccess(answer.status)) found.attach = withKey;
          else entry.note = 'refused with the ApiKey added: the block leaves it out';
          tried.push(entry);
        }
      }
    }
    if (established.length === 0) {
      // Nothing passed without the ApiKey: the service wants it too.
      for (const p of candidates) {
        const ok = await judge(p, true);
        if (ok === undefined) break;
        if (!ok) continue;
        established.push({ attach: [p, API_KEY, ...extras], label: presentationLabel(p) });
        if (!guessing) break;
      }
    }

    const what = guessing ? `${candidates.length} guess${candidates.length === 1 ? '' : 'es'}` : `${tried.length} presentations`;
    if (established.length === 1) {
      const attach = established[0]!.attach;
      return step('found', true, `GET ${url}: ${established[0]!.label} is accepted where the baseline got ${baseline.none.status}/${baseline.unknownToken.status}; tried ${what}`, {
        accepted: [established[0]!.label], attach, attachYaml: stringify({ token: { attach } }), baseline: baselineInfo,
      });
    }
    if (established.length > 1) {
      return step('ambiguous', false, `GET ${url}: several presentations are accepted: ${established.map((e) => e.label).join('; ')}`, {
        accepted: established.map((e) => e.label), baseline: baselineInfo,
        hint: 'keep the one the vendor documents; ask the support team which one they support',
      });
    }
    const budget = sent + 2 > max ? ` and stopped at the budget of ${max} requests` : '';
    return step('none', false, `GET ${url}: tried ${what}${budget}; none is accepted. Without a token the service answers ${summarize(baseline.none)}`, {
      baseline: baselineInfo,
      hint: guessing
        ? 'none of the guesses works: run --discover-attach without --try, or ask the support team'
        : 'the service wants the token some other way: send the support team the baseline printed below this line (status, WWW-Authenticate, body; `baseline` in --json) and ask how the AuthToken is presented; then test their answer with --try',
    });
  }

  function noAnswer(error: string): DoctorStep {
    return step('none', false, `GET ${url} without a token failed without an answer (${error})`, { hint: 'the service did not answer; retry, or check service.timeoutMs' });
  }
}

function triedEntry(label: string, answer: ProbeAnswer): TriedPresentation {
  return { label, status: answer.status, ...(answer.message ?? answer.excerpt ? { excerpt: answer.message ?? answer.excerpt } : {}) };
}

/** Presentations the baseline points at first (challenged scheme, a header the body names), then the standard list. */
export function orderCandidates(challenges: readonly Challenge[], answers: readonly ProbeAnswer[]): NamedAttachment[] {
  const pointed: NamedAttachment[] = [];
  for (const c of challenges) {
    const scheme = c.scheme.toLowerCase();
    // Basic carries a user and password: never a place for the token (nor for the password).
    if (scheme === 'basic' || scheme === 'digest' || scheme === 'negotiate') continue;
    pointed.push({ in: 'header', name: 'Authorization', value: `${scheme === 'bearer' ? 'Bearer' : c.scheme} {token}` });
  }
  for (const a of answers) {
    const text = `${a.message ?? ''} ${a.excerpt ?? ''}`;
    pointed.push(...placesNamedIn(text));
    for (const name of headersNamedIn(text)) pointed.push({ in: 'header', name, value: '{token}' });
    if (/access_token/.test(a.excerpt ?? '')) pointed.push({ in: 'query', name: 'access_token', value: '{token}' });
  }
  const seen = new Set<string>();
  // A name a body gives in lower case (`authtoken`) prints as the standard list spells it.
  const spelled = (p: NamedAttachment): NamedAttachment => {
    const known = STANDARD_PRESENTATIONS.find((k) => k.in === p.in && k.name.toLowerCase() === p.name.toLowerCase());
    return known ? { ...p, name: known.name } : p;
  };
  return [...pointed.map(spelled), ...STANDARD_PRESENTATIONS].filter((p) => {
    const key = `${p.in}:${p.name.toLowerCase()}:${p.value}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Where an error body says the token goes, with a placeholder for it (the product's own simulator:
 * `missing token: expected in header x-vendor-session: <token>`, `… header Authorization: Session
 * <token>`, `… query parameter sid=<token>`): the exact presentation, scheme included.
 */
export function placesNamedIn(text: string): NamedAttachment[] {
  const out: NamedAttachment[] = [];
  const token = String.raw`(?:<token>|\{token\}|<TOKEN>)`;
  for (const m of text.matchAll(new RegExp(String.raw`\bheader\s+([A-Za-z][\w-]*)\s*:\s*(?:([A-Za-z][\w-]*)\s+)?${token}`, 'gi'))) {
    if (/^(apikey|x-api-key)$/i.test(m[1]!) || /^(basic|digest|negotiate)$/i.test(m[2] ?? '')) continue;
    out.push({ in: 'header', name: m[1]!, value: m[2] ? `${m[2]} {token}` : '{token}' });
  }
  for (const m of text.matchAll(new RegExp(String.raw`\bquery\s+parameter\s+([A-Za-z][\w-]*)\s*=\s*${token}`, 'gi'))) out.push({ in: 'query', name: m[1]!, value: '{token}' });
  return out;
}

/**
 * Header names an error body points at: quoted next to the word "header" (Spring: `Required
 * request header 'X-Access-Token' for method parameter type String is not present`), or an
 * `X-…` name anywhere. The ApiKey header is not a place for the token.
 */
export function headersNamedIn(text: string): string[] {
  const names = new Set<string>();
  for (const m of text.matchAll(/header\s*['"`‘’“”]([A-Za-z][\w-]*)['"`‘’“”]|['"`‘’“”]([A-Za-z][\w-]*)['"`‘’“”]\s*header/gi)) names.add((m[1] ?? m[2])!);
  for (const m of text.matchAll(/\b(X-[A-Za-z0-9][\w-]*)/gi)) names.add(m[1]!);
  return [...names].filter((n) => n.toLowerCase() !== 'apikey' && n.toLowerCase() !== 'x-api-key');
}

function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

function summarize(a: ProbeAnswer): string {
  const challenge = a.challenge ? `, WWW-Authenticate: ${parseChallenges(a.challenge).map(formatChallenge).join(', ') || a.challenge}` : ', no WWW-Authenticate';
  const body = a.message ?? a.excerpt;
  return `${a.status}${a.location ? ` (redirect to ${a.location})` : ''}${challenge}${body ? `, body: ${body}` : ''}`;
}

function describeBaseline(b: Baseline): NonNullable<DoctorStep['baseline']> {
  const info = (a: ProbeAnswer) => ({
    status: a.status,
    ...(a.challenge ? { challenge: a.challenge } : {}),
    ...(a.message ?? a.excerpt ? { excerpt: a.message ?? a.excerpt } : {}),
    ...(a.location ? { location: a.location } : {}),
  });
  return { withoutToken: info(b.none), withUnknownToken: info(b.unknownToken) };
}

/**
 * The probe passed with the configured `token.attach`: is that evidence? Only if the path refuses
 * a request without a token. One request.
 */
export async function confirmConfigured(target: ProbeTarget): Promise<DoctorStep> {
  const url = `${target.base}${target.path}`;
  let none: ProbeAnswer;
  try {
    none = await probeWith(target, []);
  } catch (err) {
    return { step: 'discover-attach', ok: false, url, result: 'none', detail: `GET ${url} without a token failed without an answer (${(err as { code?: string }).code ?? (err as Error).message})` };
  }
  const halt = haltOf(none);
  if (halt) return haltStep(halt, none, url, 1);
  if (isSuccess(none.status)) {
    return {
      step: 'discover-attach', ok: false, url, result: 'cannot-tell',
      detail: `skipped: the probe passed, but GET ${url} answers ${none.status} without a token as well, so it proves nothing about token.attach`,
      hint: 'choose a --probe path that needs the token (one the service refuses without it)',
    };
  }
  return {
    step: 'discover-attach', ok: true, url, result: 'configured',
    detail: `configured: token.attach already works, nothing to discover (the probe passed, and without a token the service answers ${summarize(none)})`,
  };
}
