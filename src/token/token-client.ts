import { clampDelay, systemClock, type Clock } from '../shared/clock.js';
import { ClientGone, type UpstreamResponse } from '../upstream/engine.js';
import { clientCertificateAlert, clientCertificateHint, clientCertificateRefusal } from '../shared/tls-alert.js';
import type { TrustedCas } from '../shared/tls.js';
import { undiciConnect, type Egress } from '../upstream/egress.js';
import { EgressProxyError } from '../upstream/connect-tunnel.js';
import { Pool } from '../upstream/undici-core.js';
import { UndiciExchange, type ConnectionReports } from '../upstream/undici-exchange.js';
import { trackedClients } from '../upstream/undici-connections.js';
import { staleConnectionReason } from '../upstream/upstream-retry.js';
import { InvalidResponseError, TokenRefusedError, TokenRequestError, TokenUnauthorizedError } from '../shared/errors.js';
import { apiUrl, GENTOKEN_PATH } from '../shared/api-paths.js';
import { SecretSet } from '../shared/secrets.js';

/** What a token is obtained with. `version` grows whenever a value changes (rotation). */
export interface Credentials {
  apiKey: string;
  password: string;
  rkObjectId?: string;
  version: number;
}

/**
 * What the sidecar reads of a gentoken 200 body (AuthResult in config/b2b-auth.swagger.yaml).
 * `refreshToken` is never used, so it is neither required nor checked: a vendor's serialiser
 * that drops null fields (Jackson's NON_NULL) sends no `refreshToken` at all (docs/traps.md T31).
 */
export interface AuthResult {
  token: string;
  aliveSecondsTtl: number;
  /** As the vendor sent it, when it did; never read, only printed by `token --json`. */
  refreshToken?: unknown;
}

/** The gentoken call. Errors are TokenUnauthorizedError, TokenRefusedError, InvalidResponseError or TokenRequestError (with its `kind`). */
export interface TokenClient {
  requestToken(credentials: Credentials): Promise<AuthResult>;
  close(): Promise<void>;
}

/** Options of {@link createTokenClient}. */
export interface TokenClientOptions {
  /** `service.baseUrl`; gentoken lives at `{baseUrl}/pub/b2b/v1/auth/gentoken`. */
  baseUrl: string;
  /** Trusted CAs (system roots plus the extra CA, see `loadTrustedCas`); undefined = Node's defaults. */
  ca?: TrustedCas;
  /** Deadline for the whole exchange, body included, in milliseconds. */
  timeoutMs: number;
  /** The way out to the service (forward proxy, client certificate); absent = direct with `ca`. */
  egress?: Egress | undefined;
  /** Tells a reused connection from a fresh one; the system clock when absent. */
  clock?: Clock;
}

/** A token travels in a header; longer than this is not a plausible token (docs/traps.md T14). */
export const MAX_TOKEN_LENGTH = 8192;
/** Bodies are small JSON objects; refuse to buffer more than this from a confused server. */
const MAX_BODY_BYTES = 64 * 1024;
const MAX_SERVER_MESSAGE = 300;
/** Visible ASCII only: anything else makes `setHeader` throw ERR_INVALID_CHAR (docs/traps.md T14). */
const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/** The URL the client posts to: `{baseUrl}/pub/b2b/v1/auth/gentoken` (shared/api-paths.ts). */
export function gentokenUrl(options: Pick<TokenClientOptions, 'baseUrl'>): string {
  return apiUrl(options.baseUrl, GENTOKEN_PATH);
}

/**
 * Creates the gentoken client with its own keep-alive connection pool. `close()` is idempotent and
 * aborts a request in flight.
 *
 * A call that fails on a reused connection before any answer byte (reset, broken pipe, closed: the
 * service, a load balancer or the forward proxy closed the idle connection just as it was reused)
 * is sent once more at once, on a new connection, within the same deadline; it is still one call
 * for the caller and its budget. Anything else, an HTTP answer included, is never sent again here
 * (docs/traps.md T53, docs/design.md "Reliability").
 */
export function createTokenClient(options: TokenClientOptions): TokenClient {
  const { ca, timeoutMs } = options;
  const url = new URL(gentokenUrl(options));
  const clients = trackedClients(options.clock ?? systemClock);
  // Only whether a connection had carried an answer matters here; idle ages are not learned from
  // (the pool's own idle timeout is already short, and renewals seldom find a connection at all).
  const reports: ConnectionReports = { clock: options.clock ?? systemClock, staleAfterIdle: () => undefined };
  const poolOptions = {
    allowH2: false, // see undici-engine.ts
    // The CA must reach undici's connector; an https.Agent would be ignored (docs/traps.md T13).
    connect: undiciConnect(options.egress, ca, undefined) as never,
    // Renewals are minutes apart: a short idle timeout avoids reusing a socket the server closed.
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 10_000,
  };
  const pool = new Pool(url.origin, { ...poolOptions, factory: clients.factory as never });
  // The one retry's connection: `pipelining: 0` closes each connection after its answer, so the
  // retry never lands on another pooled connection that may be just as stale.
  let freshPool: Pool | undefined;
  let closed: Promise<void> | undefined;

  return {
    async requestToken(c) {
      const deadline = new ClientGone();
      // Clamped: a longer delay would fire after 1 ms (docs/traps.md T15).
      const timer = setTimeout(() => deadline.abort(), clampDelay(timeoutMs));
      // A bare dispatch never follows a redirect, which would re-send the ApiKey and the
      // password elsewhere (docs/traps.md T13).
      const send = (dispatcher: Pool, tracked: ConnectionReports | undefined) => new Promise<UpstreamResponse>((resolve, reject) => {
        dispatcher.dispatch({
          method: 'POST',
          path: url.pathname,
          headers: { 'Content-Type': 'application/json', Accept: 'application/json', ApiKey: c.apiKey },
          body: JSON.stringify({ password: c.password }),
        }, new UndiciExchange(deadline, resolve, reject, undefined, tracked));
      });
      try {
        const res = await send(pool, reports).catch((err: unknown) => {
          // The keep-alive race (docs/traps.md T53): the service never saw an answerable request,
          // and a second token is harmless. Marked only on a reused connection, before any byte
          // of an answer; the fresh pool is untracked, so its failure is final.
          if (deadline.aborted || closed || staleConnectionReason(err) === undefined) throw err;
          return send(freshPool ??= new Pool(url.origin, { ...poolOptions, pipelining: 0 }), undefined);
        });
        if (res.status === 200) return parseAuthResult(await readBody(res));
        if (res.status === 401) throw new TokenUnauthorizedError(serverMessage(await readBody(res), c));
        if (res.status === 403) {
          const message = serverMessage(await readBody(res), c);
          // serverMessage's fallback names 401; a 403 without a message says so instead.
          throw new TokenRefusedError(message.startsWith('HTTP 401') ? 'no message' : message);
        }
        // A 400 may be a TLS front's page about the client certificate (mutual TLS): read it to tell.
        if (res.status === 400) throw clientCertificateFailure(await readBody(res).catch(() => '')) ?? statusFailure(400, undefined);
        res.body.destroy();
        if (res.status >= 300 && res.status < 400) {
          const location = redirectTarget(res.headers.location, url);
          throw new TokenRequestError('auth server answered with a redirect (not followed)', { upstreamStatus: res.status, location, kind: 'http' });
        }
        throw statusFailure(res.status, res.headers['retry-after']);
      } catch (err) {
        throw describeFailure(err, deadline.aborted ? timeoutMs : undefined);
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      // Abort rather than wait: at shutdown a pending token request is of no use to anyone.
      closed ??= Promise.all([pool.destroy(), freshPool?.destroy()]).then(() => undefined);
      return closed;
    },
  };
}

/** Validates what is read of a 200 body (`token`, `aliveSecondsTtl`); every other property is ignored, `refreshToken` included. */
export function parseAuthResult(text: string): AuthResult {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new InvalidResponseError('body', 'is not JSON');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new InvalidResponseError('body', 'is not a JSON object');
  }
  const { token, refreshToken, aliveSecondsTtl } = body as Record<string, unknown>;
  if (!('token' in body)) throw new InvalidResponseError('token', 'is missing');
  if (typeof token !== 'string') throw new InvalidResponseError('token', 'is not a string');
  if (token.length === 0) throw new InvalidResponseError('token', 'is empty');
  if (token.length > MAX_TOKEN_LENGTH) throw new InvalidResponseError('token', `is longer than ${MAX_TOKEN_LENGTH} characters`);
  if (!VISIBLE_ASCII.test(token)) throw new InvalidResponseError('token', 'contains characters other than visible ASCII');
  if (!('aliveSecondsTtl' in body)) throw new InvalidResponseError('aliveSecondsTtl', 'is missing');
  if (typeof aliveSecondsTtl !== 'number') throw new InvalidResponseError('aliveSecondsTtl', 'is not a number');
  if (!Number.isSafeInteger(aliveSecondsTtl) || aliveSecondsTtl <= 0) {
    throw new InvalidResponseError('aliveSecondsTtl', 'is not a positive integer');
  }
  return 'refreshToken' in body ? { token, refreshToken, aliveSecondsTtl } : { token, aliveSecondsTtl };
}

async function readBody(res: UpstreamResponse): Promise<string> {
  const body = await res.body.readAll(MAX_BODY_BYTES);
  if (body === undefined) throw new InvalidResponseError('body', `is larger than ${MAX_BODY_BYTES} bytes`);
  return body.toString('utf8');
}

/**
 * The ErrorMessage `message` (ErrorMessage in config/b2b-auth.swagger.yaml), or a fixed text when
 * the body is anything else. Scrubbed of the credentials first, then cut: cut first, padding in
 * front of an echoed request body would leave a prefix of the password (docs/traps.md T34).
 */
function serverMessage(text: string, c: Credentials): string {
  try {
    const body: unknown = JSON.parse(text);
    if (typeof body === 'object' && body !== null && typeof (body as { message?: unknown }).message === 'string') {
      const message = scrub((body as { message: string }).message, c).replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
      if (message) return message.slice(0, MAX_SERVER_MESSAGE);
    }
  } catch {
    // not JSON: fall through
  }
  return 'HTTP 401 without a message';
}

/** Where a redirect points, resolved against the request URL; without its query, which may carry anything. */
function redirectTarget(header: string | string[] | undefined, base: URL): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (!value) return undefined;
  try {
    const to = new URL(value, base);
    return `${to.origin}${to.pathname}`;
  } catch {
    return undefined;
  }
}

/** A server that echoes what it was sent must not get the credentials into our logs, in any echoed form. */
function scrub(message: string, c: Credentials): string {
  // Pieces too: a server that echoes the first characters of the password gives none of it away.
  const secrets = new SecretSet();
  secrets.add(c.password);
  secrets.add(c.apiKey);
  return secrets.redactFragments(message);
}

const TLS_CODE = /CERT|SSL|TLS|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO|HOSTNAME|ALTNAME|KEY_TOO_SMALL/;
const DNS_CODE = /^(ENOTFOUND|EAI_AGAIN|EAI_FAIL|EAI_NODATA|EAI_NONAME)$/;
const TIMEOUT_CODE = /^(ETIMEDOUT|UND_ERR_CONNECT_TIMEOUT|UND_ERR_HEADERS_TIMEOUT|UND_ERR_BODY_TIMEOUT)$/;

/** What an OpenSSL / Node verification code means for the operator, in a few words. */
const TLS_MEANING: Readonly<Record<string, string>> = {
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'the server certificate is not signed by a trusted CA',
  UNABLE_TO_GET_ISSUER_CERT: 'the issuer of the server certificate is not trusted',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'the issuer of the server certificate is not trusted',
  SELF_SIGNED_CERT_IN_CHAIN: 'the server certificate chain ends in a CA that is not trusted',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'the server certificate is self-signed and not trusted',
  CERT_HAS_EXPIRED: 'the server certificate has expired',
  CERT_NOT_YET_VALID: 'the server certificate is not valid yet (check this host\'s clock)',
  ERR_TLS_CERT_ALTNAME_INVALID: 'the server certificate is not issued for this host name',
  EE_KEY_TOO_SMALL: 'the server certificate key is too small (Node needs RSA 2048 bits or more; doctor names its size)',
  CA_KEY_TOO_SMALL: 'a CA key in the server certificate chain is too small (Node needs RSA 2048 bits or more)',
};

/** Node (24.5+) reports a key under OpenSSL's security level as `UNSPECIFIED`; its text says which (docs/traps.md T48). */
function weakKeyCode(err: unknown): string | undefined {
  const message = (err as Error | undefined)?.message ?? '';
  return /EE certificate key too weak/i.test(message) ? 'EE_KEY_TOO_SMALL' : /CA certificate key too weak/i.test(message) ? 'CA_KEY_TOO_SMALL' : undefined;
}

/**
 * A handshake_failure alert from the server is its verdict on this client (most often: it requires
 * a client certificate and none was presented, under TLS 1.2), not ours on its certificate, so
 * service.caFile is not the fix. (Under TLS 1.3 the server refuses after the handshake and the
 * connection just closes.)
 */
const SERVER_REFUSED_HANDSHAKE: ReadonlySet<string> = new Set(['ERR_SSL_SSL/TLS_ALERT_HANDSHAKE_FAILURE', 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE']);

/** One gentoken answer other than 200/401/403/3xx, classified; 429 and 503 carry their Retry-After. */
function statusFailure(status: number, retryAfterHeader: string | string[] | undefined): TokenRequestError {
  const retryAfter = Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader;
  if (status === 429 || (status === 503 && retryAfter !== undefined)) {
    return new TokenRequestError(`auth server asked to slow down (HTTP ${status}${retryAfter !== undefined ? ', Retry-After' : ''})`, {
      upstreamStatus: status, kind: 'rate_limited', ...(retryAfter !== undefined ? { retryAfter: retryAfter.slice(0, 64) } : {}),
    });
  }
  return new TokenRequestError(`auth server answered HTTP ${status}`, { upstreamStatus: status, kind: status >= 500 ? 'server_error' : 'http' });
}

/**
 * The pages a TLS front answers with HTTP 400 when mutual TLS fails after the handshake: nginx
 * with `ssl_verify_client on` finishes the handshake without a (valid) client certificate and
 * answers 400 with one of these titles (its 496 and 495 pages). Without this the operator sees only
 * "answered HTTP 400", and nothing at run time mentions the certificate.
 */
const CLIENT_CERTIFICATE_PAGES: ReadonlyArray<[RegExp, string]> = [
  [/No required SSL certificate was sent/i,
    'auth server answered HTTP 400: it requires a client certificate (mutual TLS) and none was presented ("No required SSL certificate was sent"); set service.certFile and service.keyFile'],
  [/The SSL certificate error/i,
    'auth server answered HTTP 400: it did not accept the client certificate presented ("The SSL certificate error": another CA, expired or revoked); check service.certFile with the vendor'],
];

/**
 * A 400 that names the client certificate, as a TokenRequestError of kind `http` saying so;
 * otherwise undefined. The same answer comes back until the configuration changes: a
 * configuration failure, retried on the lockout-safe schedule instead of every few seconds.
 */
function clientCertificateFailure(body: string): TokenRequestError | undefined {
  const found = CLIENT_CERTIFICATE_PAGES.find(([page]) => page.test(body));
  return found && new TokenRequestError(found[1], { upstreamStatus: 400, kind: 'http', configuration: true });
}

/** The TLS failure in words: the code, what it means, the certificate's subject and issuer when Node gives them. */
function tlsMessage(code: string, err: unknown): string {
  if (SERVER_REFUSED_HANDSHAKE.has(code)) {
    return `TLS: ${code}: the server refused the handshake: it may require a client certificate (mutual TLS: set service.certFile and service.keyFile) or accept none of this client's TLS versions and ciphers`;
  }
  const cert = (err as { cert?: { subject?: Record<string, unknown>; issuer?: Record<string, unknown> } }).cert;
  const name = (dn: Record<string, unknown> | undefined) => (dn && typeof dn.CN === 'string' ? `CN=${dn.CN.slice(0, 100)}` : undefined);
  const subject = name(cert?.subject);
  const issuer = name(cert?.issuer);
  const about = [subject && `subject ${subject}`, issuer && `issuer ${issuer}`].filter(Boolean).join(', ');
  const meaning = TLS_MEANING[code] ?? 'the server certificate could not be verified';
  return `TLS: ${code}: ${meaning}${about ? ` (${about})` : ''}; ${/KEY_TOO_SMALL/.test(code) ? 'only the vendor can replace it' : 'check service.caFile'}`;
}

/** Maps whatever the request threw to one of the token errors, with a short, secret-free message and a kind. */
function describeFailure(err: unknown, timedOutAfterMs: number | undefined): Error {
  if (err instanceof TokenUnauthorizedError || err instanceof TokenRefusedError || err instanceof InvalidResponseError || err instanceof TokenRequestError) {
    return err;
  }
  // The forward proxy failed, not the auth server: its own message names the proxy and the setting.
  if (err instanceof EgressProxyError) return new TokenRequestError(err.message, { cause: err, kind: 'egress_proxy' });
  if (timedOutAfterMs !== undefined) return new TokenRequestError(`timed out after ${timedOutAfterMs}ms`, { cause: err, kind: 'timeout' });
  // Before the codes: under TLS 1.3 the refusal comes after the handshake, wrapped in a socket error.
  const alert = clientCertificateAlert(err);
  if (alert && alert.number !== 0) return new TokenRequestError(`TLS: ${clientCertificateRefusal(alert, 'the auth server', 'service')}`, { cause: err, kind: 'tls', configuration: true });
  const failure = failureByCode(err);
  // No alert, only a close after a certificate request: the failure keeps its kind and gains the hint.
  return alert ? new TokenRequestError(failure.message + clientCertificateHint('service'), { cause: err, kind: failure.kind }) : failure;
}

function failureByCode(err: unknown): TokenRequestError {
  const code = weakKeyCode(err) ?? (err as { code?: string } | undefined)?.code;
  if (code && DNS_CODE.test(code)) return new TokenRequestError(`auth server unreachable: ${code}`, { cause: err, kind: 'dns' });
  if (code === 'ECONNREFUSED') return new TokenRequestError('auth server unreachable: ECONNREFUSED', { cause: err, kind: 'connection_refused' });
  if (code && TIMEOUT_CODE.test(code)) return new TokenRequestError(`auth server unreachable: ${code}`, { cause: err, kind: 'timeout' });
  if (code && TLS_CODE.test(code)) return new TokenRequestError(tlsMessage(code, err), { cause: err, kind: 'tls' });
  if (code) return new TokenRequestError(`auth server unreachable: ${code}`, { cause: err });
  return new TokenRequestError('auth server unreachable', { cause: err });
}
