import type { IncomingMessage, ServerResponse } from 'node:http';
import { nonNegativeInt, readSmallBody, sendJson, sendMessage } from './http-util.js';
import type { SimContext } from './sim-context.js';
import { LATENCY_SCOPES, parseFaultKind, TOKEN_FAULT_KINDS, type LatencyScope } from './sim-faults.js';

/**
 * Prefix of the control API. Deliberately outside /pub so it can never be mistaken for (or
 * proxied as) part of the documented service; it needs no token.
 */
export const CONTROL_PREFIX = '/_simulator/';

/** The control API routes, for help texts. */
export const CONTROL_ROUTES = [
  'GET  /_simulator/stats                                    counters (tokenRequests, tokensIssued, apiRequests, ...)',
  'GET  /_simulator/faults                                   pending faults, latency, ttl',
  'POST /_simulator/faults  {"failNextTokenRequests":N,"kind":500|503|401|"garbage"|"reset"|"hang"}',
  'POST /_simulator/latency {"ms":N,"scope":"token"|"api"|"all"}',
  'POST /_simulator/ttl     {"seconds":N}',
  'POST /_simulator/revoke                                   revoke every issued token',
  'POST /_simulator/password {"password":"..."}              rotate the password (the previous one stays accepted)',
  'POST /_simulator/reset                                    clear faults and latency, zero the counters',
] as const;

type Handler = (body: Record<string, unknown>, ctx: SimContext) => string | object;

const POST_ROUTES: Record<string, Handler> = {
  faults(body, ctx) {
    const n = nonNegativeInt(body['failNextTokenRequests'], 1_000_000);
    const kind = parseFaultKind(body['kind']);
    if (n === undefined) return 'failNextTokenRequests must be a non-negative integer';
    if (kind === undefined) return `kind must be one of ${TOKEN_FAULT_KINDS.map((k) => JSON.stringify(k)).join(', ')}`;
    ctx.faults.failNextTokenRequests(n, kind);
    return ctx.faults.describe();
  },
  latency(body, ctx) {
    const ms = nonNegativeInt(body['ms'], 10 * 60_000);
    const scope = (body['scope'] ?? 'all') as LatencyScope;
    if (ms === undefined) return 'ms must be an integer from 0 to 600000';
    if (!LATENCY_SCOPES.includes(scope)) return `scope must be one of ${LATENCY_SCOPES.join(', ')}`;
    ctx.faults.setLatency(ms, scope);
    return ctx.faults.describe();
  },
  ttl(body, ctx) {
    const seconds = nonNegativeInt(body['seconds']);
    if (seconds === undefined) return 'seconds must be a non-negative integer';
    ctx.faults.setTtl(seconds);
    return ctx.faults.describe();
  },
  password(body, ctx) {
    const next = body['password'];
    if (typeof next !== 'string' || next === '') return 'password must be a non-empty string';
    ctx.previousPassword = ctx.password;
    ctx.password = next;
    return { rotated: true };
  },
  revoke(_body, ctx) {
    ctx.faults.revokeAll();
    return { revoked: true };
  },
  reset(_body, ctx) {
    ctx.faults.clear();
    ctx.stats.reset();
    return ctx.faults.describe();
  },
};

/** Handles `/_simulator/<name>`; answers 400 with a message on bad input, never throws. */
export async function handleControl(req: IncomingMessage, res: ServerResponse, ctx: SimContext, path: string): Promise<void> {
  const name = path.slice(CONTROL_PREFIX.length);
  if (req.method === 'GET' && name === 'stats') return sendJson(res, 200, ctx.stats.counters());
  if (req.method === 'GET' && name === 'faults') return sendJson(res, 200, ctx.faults.describe());
  const handler = Object.hasOwn(POST_ROUTES, name) ? POST_ROUTES[name] : undefined;
  if (!handler) return sendMessage(res, 404, `unknown control route; see ${CONTROL_PREFIX}`);
  if (req.method !== 'POST') return sendMessage(res, 405, 'use POST', { allow: 'POST' });
  const read = await readSmallBody(req, 16 * 1024);
  if (!read.ok) return sendMessage(res, 400, 'request body too large');
  let body: unknown = {};
  try {
    const text = read.body.toString('utf8').trim();
    if (text !== '') body = JSON.parse(text);
  } catch {
    return sendMessage(res, 400, 'request body is not valid JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return sendMessage(res, 400, 'request body must be a JSON object');
  const result = handler(body as Record<string, unknown>, ctx);
  if (typeof result === 'string') return sendMessage(res, 400, result);
  sendJson(res, 200, result);
}
