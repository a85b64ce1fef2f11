import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CREDENTIALS } from './stack.js';
import { testTls } from './tls.js';

/**
 * Test vendors: HTTPS services that issue tokens at the API description's gentoken and then
 * accept them the way a common server stack does, answering a missing or wrong token with that
 * stack's own status, headers and body. Written from each stack's source or documentation
 * (named at each vendor below), not from this project's code, so discovery is judged against
 * what real services send. Every request is recorded.
 */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface Vendor {
  url: string;
  readonly requests: RecordedRequest[];
  /** Tokens issued so far. */
  readonly tokens: string[];
  close(): Promise<void>;
}

/** What a protected request carries, for a vendor's check. */
export interface Presented {
  header(name: string): string | undefined;
  query(name: string): string | undefined;
  cookie(name: string): string | undefined;
  /** True for a token this vendor issued. */
  issued(value: string | undefined): boolean;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: unknown };
/** A vendor's rule for protected paths: undefined lets the request through (200). */
export type Rule = (p: Presented, req: IncomingMessage) => Answer | undefined;

/**
 * Starts a vendor whose protected paths (everything under /pub/b2b/v1/ but gentoken) follow `rule`.
 * `tokenBytes`: random bytes per token (default 32, 43 characters in base64url); 8 gives 16 hex characters.
 */
export async function startVendor(rule: Rule, options: { tokenBytes?: number } = {}): Promise<Vendor> {
  const tls = await testTls();
  const requests: RecordedRequest[] = [];
  const tokens: string[] = [];
  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString();
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      const url = new URL(req.url ?? '/', 'https://vendor.test');
      if (url.pathname === '/pub/b2b/v1/auth/gentoken' && req.method === 'POST') return gentoken(req, res, body, tokens, options.tokenBytes);
      const cookies = new Map((req.headers.cookie ?? '').split(/;\s*/).filter(Boolean).map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)] as [string, string]));
      const presented: Presented = {
        header: (name) => {
          const v = req.headers[name.toLowerCase()];
          return Array.isArray(v) ? v[0] : v;
        },
        query: (name) => url.searchParams.get(name) ?? undefined,
        cookie: (name) => cookies.get(name),
        issued: (value) => value !== undefined && tokens.includes(value),
      };
      const answer = rule(presented, req) ?? { status: 200, body: { id: 'obj-42', name: 'the object' } };
      send(res, answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}`,
    requests,
    tokens,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

function gentoken(req: IncomingMessage, res: ServerResponse, body: string, tokens: string[], tokenBytes = 32): void {
  let password: unknown;
  try {
    password = (JSON.parse(body) as { password?: unknown }).password;
  } catch {
    password = undefined;
  }
  if (req.headers.apikey !== CREDENTIALS.apiKey || password !== CREDENTIALS.password) {
    return send(res, { status: 401, body: { message: 'Invalid ApiKey or password' } });
  }
  // 32 random bytes in base64url, as the simulator issues them (43 characters).
  const token = tokenBytes === 32 ? randomBytes(32).toString('base64url') : randomBytes(tokenBytes).toString('hex');
  tokens.push(token);
  send(res, { status: 200, body: { token, refreshToken: null, aliveSecondsTtl: 900 } });
}

function send(res: ServerResponse, a: Answer): void {
  const body = a.body === undefined ? '' : typeof a.body === 'string' ? a.body : JSON.stringify(a.body);
  res.writeHead(a.status, { ...(body ? { 'content-type': typeof a.body === 'string' ? 'text/html' : 'application/json' } : {}), ...a.headers });
  res.end(body);
}

/** The ApiKey the API description requires on every operation (its security scheme). */
const apiKeyMissing = (p: Presented): boolean => p.header('ApiKey') !== CREDENTIALS.apiKey;

/**
 * The vendors. Sources of each answer:
 * - spring: Spring Framework's MissingRequestHeaderException message ("Required request header
 *   '<name>' for method parameter type <type> is not present", spring-web
 *   org/springframework/web/bind/MissingRequestHeaderException.java) in Spring Boot's error body
 *   (DefaultErrorAttributes: timestamp, status, error, message, path; message shown with
 *   server.error.include-message=always), status 400.
 * - drf: Django REST framework TokenAuthentication (rest_framework/authentication.py: keyword
 *   "Token", authenticate_header → "Token"; NotAuthenticated "Authentication credentials were not
 *   provided."; "Invalid token."), status 401 with WWW-Authenticate: Token.
 * - bearer: RFC 6750 §3 (WWW-Authenticate: Bearer realm=…; error="invalid_token" for a bad token).
 * - query: RFC 6750 §2.3, the access_token URI query parameter, challenged as Bearer.
 * - bare401: the API description's ErrorMessage {message} with 401 and no challenge (RFC 9110
 *   §11.6.1 requires one; many services omit it).
 * - forbidden: 403 for a missing or unknown token (as AWS API Gateway answers
 *   {"message":"Forbidden"} for a missing API key).
 * - notFound: GitHub's REST API answers 404 {"message":"Not Found","documentation_url":…} for a
 *   resource the caller may not see, without revealing that it needs authentication.
 * - login: a web stack's 302 to its login page (Location /login?next=…).
 */
export const VENDORS = {
  spring: ((p) => (p.header('X-Access-Token') === undefined
    ? { status: 400, body: { timestamp: '2026-11-25T02:00:00.000+00:00', status: 400, error: 'Bad Request', message: "Required request header 'X-Access-Token' for method parameter type String is not present", path: '/pub/b2b/v1/objects/obj-42' } }
    : !p.issued(p.header('X-Access-Token')) ? { status: 401, body: { timestamp: '2026-11-25T02:00:00.000+00:00', status: 401, error: 'Unauthorized', path: '/pub/b2b/v1/objects/obj-42' } }
      : undefined)) as Rule,
  drf: ((p) => {
    const auth = p.header('Authorization');
    if (!auth?.startsWith('Token ')) return { status: 401, headers: { 'WWW-Authenticate': 'Token' }, body: { detail: 'Authentication credentials were not provided.' } };
    return p.issued(auth.slice(6)) ? undefined : { status: 401, headers: { 'WWW-Authenticate': 'Token' }, body: { detail: 'Invalid token.' } };
  }) as Rule,
  bearer: ((p) => {
    const auth = p.header('Authorization');
    if (!auth?.startsWith('Bearer ')) return { status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="b2b"' } };
    return p.issued(auth.slice(7)) && !apiKeyMissing(p) ? undefined
      : { status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="b2b", error="invalid_token", error_description="The access token is invalid"' } };
  }) as Rule,
  query: ((p) => (p.issued(p.query('access_token')) ? undefined
    : { status: 401, headers: { 'WWW-Authenticate': p.query('access_token') ? 'Bearer realm="b2b", error="invalid_token"' : 'Bearer realm="b2b"' } })) as Rule,
  bare401: ((p) => (p.issued(p.header('AuthToken')) && !apiKeyMissing(p) ? undefined : { status: 401, body: { message: 'Unauthorized' } })) as Rule,
  forbidden: ((p) => (p.issued(p.header('X-API-Token')) ? undefined : { status: 403, body: { message: 'Forbidden' } })) as Rule,
  notFound: ((p) => (p.issued(p.header('X-Token')) ? undefined : { status: 404, body: { message: 'Not Found', documentation_url: 'https://docs.vendor.test/rest' } })) as Rule,
  login: ((p) => (p.issued(p.cookie('AuthToken')) ? undefined : { status: 302, headers: { Location: '/login?next=%2Fpub%2Fb2b%2Fv1%2Fobjects%2Fobj-42' } })) as Rule,
  /** A path that needs no token at all. */
  open: (() => undefined) as Rule,
  /** A presentation outside every list: only `--try` can find it. */
  outside: ((p) => (p.issued(p.header('X-Vendor-Session')) ? undefined : { status: 401, body: { message: 'session required' } })) as Rule,
  /** Lets any `Token` header value through (a sloppy check), but really wants X-Auth-Token. */
  sloppy: ((p) => (p.header('Token') !== undefined || p.issued(p.header('X-Auth-Token')) ? undefined : { status: 401, body: { message: 'Unauthorized' } })) as Rule,
  /** Accepts two presentations, for an ambiguous verdict. */
  twoWays: ((p) => (p.issued(p.header('X-Auth-Token')) || p.issued(p.header('Authorization')?.replace(/^Bearer /, '')) ? undefined : { status: 401, body: { message: 'Unauthorized' } })) as Rule,
} satisfies Record<string, Rule>;

/**
 * A vendor that keeps one live token per ApiKey, as the services `B2BSidecarTokenSuperseded` is
 * about: issuing a token revokes the one before. Protected paths under `path` want the newest token
 * as `Authorization: Bearer` with the ApiKey (what the default token.attach sends); others are 404.
 * With `echo`, an accepted request is answered 404 quoting the Authorization it got, as debug
 * builds and gateways do.
 */
export async function startOneTokenVendor(path: string, options: { echo?: boolean } = {}): Promise<Vendor> {
  let vendor: Vendor | undefined;
  vendor = await startVendor((p, req) => {
    if (!(req.url ?? '').startsWith(path)) return { status: 404, body: { message: 'Not Found' } };
    const token = p.header('Authorization')?.replace(/^Bearer /, '');
    if (apiKeyMissing(p) || token === undefined || token !== vendor!.tokens.at(-1)) {
      return { status: 401, headers: { 'WWW-Authenticate': 'Bearer realm="b2b"' }, body: { message: 'token revoked or missing' } };
    }
    if (options.echo) return { status: 404, body: { message: `no object for Authorization: ${p.header('Authorization')}` } };
    return undefined;
  });
  return vendor;
}
