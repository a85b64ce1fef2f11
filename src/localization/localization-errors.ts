import { SidecarError } from '../shared/errors.js';

/** What every localization failure may carry besides its message. */
export interface LocalizationErrorDetails {
  /** The server's own reason (Weblate `detail`), cleaned of control characters and the token. */
  serverReason?: string;
  /** HTTP status the localization server answered with. */
  upstreamStatus?: number;
  /** The X-RateLimit-Remaining header of the failed answer, when present. */
  rateLimitRemaining?: number;
  cause?: unknown;
}

/**
 * Base of the localization lookup errors: a stable `code` (SIDECAR_ERR_L10N_*), the status a
 * client of the sidecar would see, and the server's reason when it gave one.
 */
export class LocalizationError extends SidecarError {
  override name = 'LocalizationError';
  readonly serverReason: string | undefined;
  readonly upstreamStatus: number | undefined;
  readonly rateLimitRemaining: number | undefined;
  constructor(code: string, status: number, message: string, details: LocalizationErrorDetails = {}) {
    super(code, status, message, { cause: details.cause });
    this.serverReason = details.serverReason;
    this.upstreamStatus = details.upstreamStatus;
    this.rateLimitRemaining = details.rateLimitRemaining;
  }
}

export { TranslationRefError } from '../config/translation-ref.js';

/** 404: the server has no such project, component or language. */
export class TranslationNotFoundError extends LocalizationError {
  override name = 'TranslationNotFoundError';
  constructor(what: string, details: LocalizationErrorDetails) {
    super('SIDECAR_ERR_L10N_NOT_FOUND', 404, `translation ${what} not found: ${details.serverReason ?? 'HTTP 404'}`, details);
  }
}

/** 401/403: the localization token is missing, wrong or lacks access. */
export class LocalizationUnauthorizedError extends LocalizationError {
  override name = 'LocalizationUnauthorizedError';
  constructor(what: string, details: LocalizationErrorDetails) {
    const reason = details.serverReason ?? `HTTP ${details.upstreamStatus}`;
    super('SIDECAR_ERR_L10N_UNAUTHORIZED', 502, `localization server refused access to ${what}: ${reason}`, details);
  }
}

/** 429: throttled; `retryAfterSeconds` comes from Retry-After (seconds or HTTP-date). */
export class LocalizationRateLimitedError extends LocalizationError {
  override name = 'LocalizationRateLimitedError';
  readonly retryAfterSeconds: number | undefined;
  constructor(what: string, retryAfterSeconds: number | undefined, details: LocalizationErrorDetails) {
    const wait = retryAfterSeconds === undefined ? '' : ` (retry after ${retryAfterSeconds} s)`;
    super('SIDECAR_ERR_L10N_RATE_LIMITED', 429, `localization server throttled the lookup of ${what}${wait}: ${details.serverReason ?? 'HTTP 429'}`, details);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/** 5xx, a redirect (never followed) or any other unexpected status. */
export class LocalizationServerError extends LocalizationError {
  override name = 'LocalizationServerError';
  constructor(what: string, details: LocalizationErrorDetails) {
    const reason = details.serverReason ?? `HTTP ${details.upstreamStatus}`;
    super('SIDECAR_ERR_L10N_SERVER', 502, `localization server failed the lookup of ${what}: ${reason}`, details);
  }
}

/** The server could not be reached: network, TLS or the request deadline. */
export class LocalizationRequestError extends LocalizationError {
  override name = 'LocalizationRequestError';
  constructor(message: string, cause?: unknown, timedOut = false) {
    super(timedOut ? 'SIDECAR_ERR_L10N_TIMEOUT' : 'SIDECAR_ERR_L10N_REQUEST', timedOut ? 504 : 502, message, { cause });
  }
}
