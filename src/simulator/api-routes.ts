import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { STATUS_CODES } from 'node:http';
import { fingerprint } from '../shared/secrets.js';
import { hashBody, safeEqual, sendJson, sendMessage, waitUnlessClosed } from './http-util.js';
import type { SimContext } from './sim-context.js';
import { download, drip, slow } from './stream-routes.js';
import { describePresentation, presentedToken } from './token-presentation.js';

/** Prefix of the protected sample operations. */
export const API_PREFIX = '/pub/b2b/v1/';

/**
 * The protected sample operations. Each needs a valid token presented the configured way
 * (`ctx.auth`; by default `Authorization: Bearer` plus the right ApiKey, exactly what the sidecar
 * attaches by default), otherwise 401 ErrorMessage.
 */
export async function handleApi(req: IncomingMessage, res: ServerResponse, ctx: SimContext, path: string, rawQuery: string): Promise<void> {
  ctx.stats.apiRequests++;
  if (!(await waitUnlessClosed(ctx.faults.latency('api'), res))) return;
  const query = new URLSearchParams(rawQuery);
  const denied = authorize(req, query, ctx);
  if (denied) {
    ctx.stats.unauthorizedApiRequests++;
    sendMessage(res, 401, denied);
    return;
  }
  const route = path.slice(API_PREFIX.length);
  if (route === 'echo' || route.startsWith('echo/')) return echo(req, res, ctx, path, rawQuery);
  if (route.startsWith('objects/') && req.method === 'GET') return object(res, ctx, route.slice('objects/'.length));
  if (req.method !== 'GET') return sendMessage(res, 404, 'no such operation');
  switch (route) {
    case 'download': return download(res, query);
    case 'slow': return slow(res, query);
    case 'drip': return drip(res, query);
    case 'json1k': return sendJson(res, 200, JSON_1K);
    case 'redirect': {
      const to = query.get('to');
      if (!to) return sendMessage(res, 400, 'the to query parameter is required');
      return sendMessage(res, 302, `redirecting to ${to}`, { location: to });
    }
  }
  const status = /^status\/(\d{3})$/.exec(route);
  if (status && Number(status[1]) >= 200 && Number(status[1]) <= 599) return sendStatus(res, Number(status[1]));
  sendMessage(res, 404, 'no such operation');
}

/** Why the request may not use a protected operation, or undefined. Counts expired/revoked tokens. */
function authorize(req: IncomingMessage, query: URLSearchParams, ctx: SimContext): string | undefined {
  const token = presentedToken(req.headers, query, ctx.auth);
  let tokenProblem: string | undefined;
  if (token === undefined) {
    tokenProblem = `missing token: expected in ${describePresentation(ctx.auth)}`;
  } else {
    const verdict = ctx.tokens.check(token);
    if (verdict === 'expired') ctx.stats.expiredTokenPresented++;
    if (verdict === 'revoked') ctx.stats.revokedTokenPresented++;
    if (verdict !== 'valid') tokenProblem = verdict === 'unknown' ? 'invalid token' : `token ${verdict}`;
  }
  if (tokenProblem) return tokenProblem;
  // A token is valid only with the key it was issued to (several keys: each set's own token).
  const owner = ctx.tokens.ownerOf(token!) ?? ctx.apiKey;
  if (!ctx.auth.requireApiKey) return undefined;
  const apiKey = req.headers['apikey'];
  if (typeof apiKey !== 'string' || !safeEqual(apiKey, owner)) return 'missing or invalid ApiKey';
  return undefined;
}

async function echo(req: IncomingMessage, res: ServerResponse, ctx: SimContext, path: string, query: string): Promise<void> {
  const body = await hashBody(req);
  if (!body) return;
  sendJson(res, 200, {
    method: req.method,
    path,
    query: ctx.auth.in === 'query' ? redactQuery(query, ctx.auth.name) : query,
    headers: redactHeaders(req.headers, ctx.auth.in === 'header' ? ctx.auth.name : 'authorization'),
    bodyBytes: body.bytes,
    bodySha256: body.sha256,
  });
}

/** Header values that carry credentials are shown as fingerprints, so an echo never leaks them. */
export function redactHeaders(headers: IncomingHttpHeaders, authHeader: string): Record<string, string | string[]> {
  const secret = new Set(['authorization', 'proxy-authorization', 'apikey', 'cookie', authHeader]);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    const hide = (v: string): string => `sha256:${fingerprint(v)}`;
    out[name] = secret.has(name) ? (Array.isArray(value) ? value.map(hide) : hide(value)) : value;
  }
  return out;
}

/** The raw query with the token parameter's values shown as fingerprints (URLSearchParams never throws on bad %). */
function redactQuery(raw: string, name: string): string {
  return raw.split('&').map((pair) => {
    const [entry] = new URLSearchParams(pair);
    return entry?.[0] === name ? `${pair.split('=')[0]}=sha256:${fingerprint(entry[1])}` : pair;
  }).join('&');
}

function object(res: ServerResponse, ctx: SimContext, rawId: string): void {
  let id: string;
  try {
    id = decodeURIComponent(rawId);
  } catch {
    return sendMessage(res, 404, 'no such object');
  }
  if (id === '' || id.includes('/') || (ctx.rkObjectId !== undefined && id !== ctx.rkObjectId)) {
    return sendMessage(res, 404, 'no such object');
  }
  sendJson(res, 200, {
    rkObjectId: id,
    name: 'Demo integrator point of sale',
    kind: 'retail',
    status: 'active',
    address: { country: 'RU', city: 'Moscow', line1: 'Tverskaya st. 1' },
    timezone: 'Europe/Moscow',
    contacts: [{ role: 'support', email: 'support@example.com' }],
    createdAt: '2024-01-15T09:30:00Z',
    updatedAt: '2025-06-01T12:00:00Z',
  });
}

function sendStatus(res: ServerResponse, status: number): void {
  // 204 and 304 must not carry a body.
  if (status === 204 || status === 304) {
    res.writeHead(status);
    res.end();
    return;
  }
  sendMessage(res, status, STATUS_CODES[status] ?? `status ${status}`);
}

/** About 1 KiB of JSON, built once, for benchmarks. */
const JSON_1K = {
  items: Array.from({ length: 17 }, (_, i) => ({ id: i + 1, sku: `SKU-${1000 + i}`, title: `Sample item ${i + 1}`, qty: i % 5 })),
};
