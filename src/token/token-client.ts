import { clampDelay } from '../shared/clock.js';
import { ClientGone, type UpstreamResponse } from '../upstream/engine.js';
import { trustContext, type TrustedCas } from '../shared/tls.js';
import { Pool } from '../upstream/undici-core.js';
import { UndiciExchange } from '../upstream/undici-exchange.js';
import { InvalidResponseError, TokenRequestError, TokenUnauthorizedError } from '../shared/errors.js';
import { apiUrl, GENTOKEN_PATH } from '../shared/api-paths.js';
import { echoedForms } from '../shared/secrets.js';

/** What a token is obtained with. `version` grows whenever a value changes (rotation). */
export interface Credentials {
  apiKey: string;
  password: string;
  rkObjectId?: string;
  version: number;
}

/** A validated gentoken 200 body (AuthResult in config/b2b-auth.swagger.yaml). `refreshToken` is unused but must be present. */
export interface AuthResult {
  token: string;
  refreshToken: string | null;
  aliveSecondsTtl: number;
}

/** The gentoken call. Errors are TokenUnauthorizedError, InvalidResponseError or TokenRequestError. */
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
 */
export function createTokenClient(options: TokenClientOptions): TokenClient {
  const { ca, timeoutMs } = options;
  const url = new URL(gentokenUrl(options));
  // The CA must reach undici's connector; an https.Agent would be ignored (docs/traps.md T13).
  const pool = new Pool(url.origin, {
    allowH2: false, // see undici-engine.ts
    connect: ca ? { secureContext: trustContext(ca), rejectUnauthorized: true } : { rejectUnauthorized: true },
    // Renewals are minutes apart: a short idle timeout avoids reusing a socket the server closed.
    keepAliveTimeout: 4_000,
    keepAliveMaxTimeout: 10_000,
  });
  let closed: Promise<void> | undefined;

  return {
    async requestToken(c) {
      const deadline = new ClientGone();
      // Clamped: a longer delay would fire after 1 ms (docs/traps.md T15).
      const timer = setTimeout(() => deadline.abort(), clampDelay(timeoutMs));
      try {
        // A bare dispatch never follows a redirect, which would re-send the ApiKey and the
        // password elsewhere (docs/traps.md T13).
        const res = await new Promise<UpstreamResponse>((resolve, reject) => {
          pool.dispatch({
            method: 'POST',
            path: url.pathname,
            headers: { 'Content-Type': 'application/json', Accept: 'application/json', ApiKey: c.apiKey },
            body: JSON.stringify({ password: c.password }),
          }, new UndiciExchange(deadline, resolve, reject));
        });
        if (res.status === 200) return parseAuthResult(await readBody(res));
        if (res.status === 401) throw new TokenUnauthorizedError(serverMessage(await readBody(res), c));
        res.body.destroy();
        if (res.status >= 300 && res.status < 400) {
          const location = redirectTarget(res.headers.location, url);
          throw new TokenRequestError('auth server answered with a redirect (not followed)', { upstreamStatus: res.status, location });
        }
        throw new TokenRequestError(`auth server answered HTTP ${res.status}`, { upstreamStatus: res.status });
      } catch (err) {
        throw describeFailure(err, deadline.aborted ? timeoutMs : undefined);
      } finally {
        clearTimeout(timer);
      }
    },
    close() {
      // Abort rather than wait: at shutdown a pending token request is of no use to anyone.
      closed ??= pool.destroy();
      return closed;
    },
  };
}

/** Validates a 200 body against AuthResult; extra properties are ignored. */
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
  if (!('refreshToken' in body)) throw new InvalidResponseError('refreshToken', 'is missing');
  if (refreshToken !== null && typeof refreshToken !== 'string') {
    throw new InvalidResponseError('refreshToken', 'is neither a string nor null');
  }
  if (!('aliveSecondsTtl' in body)) throw new InvalidResponseError('aliveSecondsTtl', 'is missing');
  if (typeof aliveSecondsTtl !== 'number') throw new InvalidResponseError('aliveSecondsTtl', 'is not a number');
  if (!Number.isSafeInteger(aliveSecondsTtl) || aliveSecondsTtl <= 0) {
    throw new InvalidResponseError('aliveSecondsTtl', 'is not a positive integer');
  }
  return { token, refreshToken, aliveSecondsTtl };
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
  let out = message;
  for (const form of [c.password, c.apiKey].flatMap((secret) => (secret ? echoedForms(secret) : []))) {
    out = out.split(form).join('[REDACTED]');
  }
  return out;
}

const TLS_CODE = /CERT|SSL|TLS|UNABLE_TO_|SELF_SIGNED|DEPTH_ZERO|HOSTNAME|ALTNAME/;

/** Maps whatever the request threw to one of the three token errors, with a short, secret-free message. */
function describeFailure(err: unknown, timedOutAfterMs: number | undefined): Error {
  if (err instanceof TokenUnauthorizedError || err instanceof InvalidResponseError || err instanceof TokenRequestError) {
    return err;
  }
  if (timedOutAfterMs !== undefined) return new TokenRequestError(`timed out after ${timedOutAfterMs}ms`, { cause: err });
  const code = (err as { code?: string } | undefined)?.code;
  if (code && TLS_CODE.test(code)) return new TokenRequestError(`TLS: ${code}`, { cause: err });
  if (code) return new TokenRequestError(`auth server unreachable: ${code}`, { cause: err });
  return new TokenRequestError('auth server unreachable', { cause: err });
}
