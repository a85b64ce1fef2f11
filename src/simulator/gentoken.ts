import type { IncomingMessage, ServerResponse } from 'node:http';
import { mediaType, readSmallBody, safeEqual, sendJson, sendMessage, waitUnlessClosed } from './http-util.js';
import type { SimContext } from './sim-context.js';
import type { TokenFaultKind } from './sim-faults.js';

/** The token operation's path (config/b2b-auth.swagger.yaml: basePath /pub + /b2b/v1/auth/gentoken). */
export const GENTOKEN_PATH = '/pub/b2b/v1/auth/gentoken';
/** A password body is a few dozen bytes; anything far larger is not a Back2BackAuthRequest. */
const MAX_BODY_BYTES = 16 * 1024;

/**
 * `POST /pub/b2b/v1/auth/gentoken`, strictly as the seed documents it: POST, application/json,
 * header ApiKey, body exactly `{"password": string}`. Every rejection is 401 ErrorMessage
 * (the only error the seed defines), except a wrong method (405).
 */
export async function handleGentoken(req: IncomingMessage, res: ServerResponse, ctx: SimContext): Promise<void> {
  ctx.stats.tokenRequests++;
  ctx.tokenRequestTimes.push(performance.now());
  if (ctx.tokenRequestTimes.length > 100_000) ctx.tokenRequestTimes.splice(0, 50_000);
  const read = await readSmallBody(req, MAX_BODY_BYTES);
  if (!read.ok && read.reason === 'aborted') return;
  const bodyText = read.ok ? read.body.toString('utf8') : '';
  ctx.stats.lastTokenRequest = { method: req.method ?? '', headers: { ...req.headers }, body: bodyText, ...(req.socket.remotePort ? { remotePort: req.socket.remotePort } : {}) };

  if (!(await waitUnlessClosed(ctx.faults.latency('token'), res))) return;
  const fault = ctx.faults.takeTokenFault();
  if (fault !== undefined) {
    injectFault(fault, req, res);
    return;
  }

  if (req.method !== 'POST') {
    sendMessage(res, 405, 'method not allowed: the token operation accepts POST only', { allow: 'POST' });
    return;
  }
  const problem = rejectReason(req, read.ok ? bodyText : undefined, ctx);
  if (problem) {
    sendMessage(res, 401, problem);
    return;
  }
  const ttl = ctx.faults.ttlSeconds;
  const token = ctx.tokens.issue(ttl, String(req.headers['apikey']), ctx.oneLiveTokenPerKey);
  ctx.stats.tokensIssued++;
  sendJson(res, 200, { token, refreshToken: null, aliveSecondsTtl: ttl });
}

/** Why the request is unauthorized, or undefined when it is a valid Back2BackAuthRequest. */
function rejectReason(req: IncomingMessage, body: string | undefined, ctx: SimContext): string | undefined {
  if (mediaType(req.headers['content-type']) !== 'application/json') return 'Content-Type must be application/json';
  const apiKey = req.headers['apikey'];
  if (typeof apiKey !== 'string' || apiKey === '') return 'the ApiKey header is required';
  if (body === undefined) return 'request body is too large';
  if (body.trim() === '') return 'request body is required';
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return 'request body is not valid JSON';
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return 'request body must be a JSON object';
  const keys = Object.keys(parsed);
  if (keys.length !== 1 || keys[0] !== 'password') {
    return 'request body must have exactly one property, password';
  }
  const password = (parsed as { password: unknown }).password;
  if (typeof password !== 'string') return 'password must be a string';
  // One message for a wrong key or a wrong password: the service should not say which one.
  const other = ctx.otherKeys.get(apiKey);
  if (other !== undefined) return safeEqual(password, other) ? undefined : 'invalid ApiKey or password';
  const keyOk = safeEqual(apiKey, ctx.apiKey);
  const passwordOk = safeEqual(password, ctx.password) || (ctx.previousPassword !== undefined && safeEqual(password, ctx.previousPassword));
  return keyOk && passwordOk ? undefined : 'invalid ApiKey or password';
}

function injectFault(kind: TokenFaultKind, req: IncomingMessage, res: ServerResponse): void {
  switch (kind) {
    case 'reset':
      req.socket.destroy();
      return;
    case 'hang':
      // Never answered; the socket stays open until the client gives up or stop() closes it.
      return;
    case 'garbage':
      // A 200 that is not an AuthResult: no token, a non-numeric lifetime.
      sendJson(res, 200, { status: 'ok', aliveSecondsTtl: 'soon' });
      return;
    case 401:
      sendMessage(res, 401, 'simulated fault: unauthorized');
      return;
    default:
      sendMessage(res, kind, `simulated fault: ${kind}`);
  }
}
