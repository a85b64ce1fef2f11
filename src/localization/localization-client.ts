import { clampDelay } from '../shared/clock.js';
import type { TrustedCas } from '../shared/tls.js';
import { undiciConnect, type Egress } from '../upstream/egress.js';
import { Agent, request } from '../upstream/undici-request.js';
import type { Upstream } from '../upstream/open-upstream.js';
import { InvalidResponseError } from '../shared/errors.js';
import {
  LocalizationRateLimitedError, LocalizationRequestError, LocalizationServerError,
  LocalizationUnauthorizedError, TranslationNotFoundError, type LocalizationErrorDetails,
} from './localization-errors.js';
import { parseTranslation, type Translation } from './translation-schema.js';
import { formatTranslationRef, parseTranslationRef, translationApiPath, type TranslationRef } from '../config/translation-ref.js';

export { parseTranslationRef, formatTranslationRef, type TranslationRef } from '../config/translation-ref.js';

export interface LocalizationClientOptions {
  /** Server root; the lookup is `{baseUrl}/api/translations/<p>/<c>/<l>/` (see translationApiPath). */
  baseUrl: string;
  /** Trusted CAs (system roots + extra, from `loadTrustedCas`); undefined = Node's defaults. */
  ca?: TrustedCas;
  /** Current API token, read on every request so a rotated token file takes effect. */
  token?: () => string | undefined;
  /** Deadline for one whole lookup (headers and body), in milliseconds. */
  timeoutMs: number;
  /** Allow an http:// baseUrl (tests only: the token would travel in clear text). */
  allowInsecureHttp?: boolean;
  /** Wall-clock ms, for Retry-After given as an HTTP-date. */
  wallNow?: () => number;
  /** The way out to the server (forward proxy, client certificate); absent = direct with `ca`. */
  egress?: Egress | undefined;
}

export interface TranslationLookup {
  translation: Translation;
  /** X-RateLimit-Remaining of the answer, when the server sent it. */
  rateLimitRemaining?: number;
}

export interface LocalizationClient {
  getTranslation(ref: TranslationRef): Promise<TranslationLookup>;
  /** Closes the connection pool; idempotent. */
  close(): Promise<void>;
}

/** The lookup client on an opened upstream (its address, trust, way out and deadline), closed with it. */
export function localizationClientOn(upstream: Upstream, token: () => string | undefined): LocalizationClient {
  const { settings } = upstream;
  return upstream.adopt(createLocalizationClient({
    baseUrl: settings.baseUrl, ...(upstream.ca ? { ca: upstream.ca } : {}), egress: upstream.egress.egress, token,
    timeoutMs: settings.timeoutMs, allowInsecureHttp: settings.allowInsecureHttp,
  }));
}

/** A translation object is a few KiB; anything far larger is not one. */
const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Read-only client of Weblate's translation lookup. It has its own undici Agent (so the extra CA
 * applies) and never follows redirects: a redirect could carry the token to another host.
 * Failures are typed (see localization-errors.ts) and never contain the token.
 */
export function createLocalizationClient(options: LocalizationClientOptions): LocalizationClient {
  const base = new URL(options.baseUrl);
  if (base.protocol !== 'https:' && !(base.protocol === 'http:' && options.allowInsecureHttp)) {
    throw new Error(`localization baseUrl must be https:// (got ${base.protocol})`);
  }
  const root = options.baseUrl.replace(/\/+$/, '');
  // allowH2: false, see undici-engine.ts.
  // Verification pinned on: NODE_TLS_REJECT_UNAUTHORIZED=0 in the environment must not send the
  // localization token to a server whose certificate nobody trusts (docs/traps.md T10).
  const agent = new Agent({
    connect: undiciConnect(options.egress, options.ca, undefined) as never,
    keepAliveTimeout: 4000,
    allowH2: false,
  });
  const wallNow = options.wallNow ?? Date.now;
  let closed: Promise<void> | undefined;

  async function getTranslation(ref: TranslationRef): Promise<TranslationLookup> {
    // Re-parse so a hand-built ref with a `..` or an empty part cannot reach another API path.
    const checked = parseTranslationRef(formatTranslationRef(ref));
    const what = formatTranslationRef(checked);
    const token = options.token?.();
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token) headers.authorization = `Token ${token}`;
    // Clamped: AbortSignal.timeout is a timer, and a longer one fires after 1 ms (docs/traps.md T15).
    const signal = AbortSignal.timeout(clampDelay(options.timeoutMs));
    let status: number;
    let responseHeaders: Record<string, string | string[] | undefined>;
    let text: string;
    try {
      const target = new URL(root + translationApiPath(checked));
      const res = await request(agent, { origin: target.origin, path: target.pathname + target.search, method: 'GET', headers, signal });
      status = res.statusCode;
      responseHeaders = res.headers;
      text = await readLimited(res.body);
    } catch (err) {
      if (err instanceof InvalidResponseError) throw err;
      if (signal.aborted) throw new LocalizationRequestError(`localization server did not answer within ${options.timeoutMs} ms`, err, true);
      const reason = err instanceof Error ? `${(err as NodeJS.ErrnoException).code ?? err.name}: ${err.message}` : String(err);
      throw new LocalizationRequestError(`localization server unreachable (network or TLS): ${clean(reason, token)}`, err);
    }
    const rateLimitRemaining = headerInt(responseHeaders['x-ratelimit-remaining']);
    if (status === 200) {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (err) {
        throw new InvalidResponseError('(body)', 'is not JSON', { cause: err });
      }
      const translation = parseTranslation(json);
      return rateLimitRemaining === undefined ? { translation } : { translation, rateLimitRemaining };
    }
    const details: LocalizationErrorDetails = { upstreamStatus: status, rateLimitRemaining };
    const reason = weblateReason(text);
    if (reason) details.serverReason = clean(reason, token);
    if (status === 404) throw new TranslationNotFoundError(what, details);
    if (status === 401 || status === 403) throw new LocalizationUnauthorizedError(what, details);
    if (status === 429) {
      throw new LocalizationRateLimitedError(what, parseRetryAfter(header(responseHeaders['retry-after']), wallNow()), details);
    }
    if (status >= 300 && status < 400) details.serverReason = `HTTP ${status} redirect (not followed)`;
    throw new LocalizationServerError(what, details);
  }

  return {
    getTranslation,
    close: () => (closed ??= agent.close()),
  };
}

/**
 * The reason from Weblate's two error shapes: `{"detail": "..."}` (DRF) and, from Weblate 5.10,
 * `{"type": "client_error", "errors": [{"code", "detail", "attr"}]}`. Undefined for anything else.
 */
export function weblateReason(body: string): string | undefined {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof json !== 'object' || json === null) return undefined;
  const { detail, errors } = json as { detail?: unknown; errors?: unknown };
  if (typeof detail === 'string') return detail;
  if (!Array.isArray(errors)) return undefined;
  const parts = errors
    .filter((e): e is { detail: string; attr?: unknown } => typeof e?.detail === 'string')
    .map((e) => (typeof e.attr === 'string' && e.attr ? `${e.attr}: ${e.detail}` : e.detail));
  return parts.length > 0 ? parts.join('; ') : undefined;
}

/** Retry-After as whole seconds from now: delay-seconds or an HTTP-date (RFC 9110 §10.2.3). */
export function parseRetryAfter(value: string | undefined, wallNowMs: number): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  const at = Date.parse(text);
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - wallNowMs) / 1000)) : undefined;
}

async function readLimited(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new InvalidResponseError('(body)', `is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function headerInt(value: string | string[] | undefined): number | undefined {
  const text = header(value)?.trim();
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

/** Server text goes into messages and terminals: drop control characters, cap length, hide the token. */
function clean(text: string, token: string | undefined): string {
  // eslint-disable-next-line no-control-regex
  const out = token ? text.split(token).join('[REDACTED]') : text;
  return out.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim().slice(0, 300);
}
