// shared/: leaves every other folder may use (clock, errors, TLS trust, secrets, the IP guard,
// attachment kinds, the JSON sender, the file watcher, the run group); imports nothing else in src/.
/**
 * One error base with a stable `code` and the HTTP status a client sees (undici's UND_ERR_* style).
 * Messages are safe to show to clients and to log: they never contain a secret.
 */
export class SidecarError extends Error {
  // A literal in every class: the CLI bundle is minified without keepNames (whose per-closure
  // defineProperty calls showed up on the request path), so constructor names are not stable.
  override name = 'SidecarError';
  readonly code: string;
  readonly status: number;
  constructor(code: string, status: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.status = status;
  }
}

/** The configuration is invalid; `problems` lists each one as "key (ENV_VAR): reason". */
export class ConfigError extends SidecarError {
  override name = 'ConfigError';
  readonly problems: string[];
  constructor(problems: string[]) {
    super('SIDECAR_ERR_CONFIG', 500, `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

/** gentoken answered 401: the credentials were rejected. `serverMessage` is the server's reason. */
export class TokenUnauthorizedError extends SidecarError {
  override name = 'TokenUnauthorizedError';
  readonly serverMessage: string;
  constructor(serverMessage: string) {
    super('SIDECAR_ERR_TOKEN_UNAUTHORIZED', 503, `credentials rejected by the auth server: ${serverMessage}`);
    this.serverMessage = serverMessage;
  }
}

/** A server answered, but its body is not what the API describes. `field` names the bad field. */
export class InvalidResponseError extends SidecarError {
  override name = 'InvalidResponseError';
  readonly field: string;
  constructor(field: string, reason: string, options?: { cause?: unknown }) {
    super('SIDECAR_ERR_INVALID_RESPONSE', 502, `invalid response: ${field} ${reason}`, options);
    this.field = field;
  }
}

/** gentoken answered 403: the request was refused, most often because this host's egress address is not on the allow list. */
export class TokenRefusedError extends SidecarError {
  override name = 'TokenRefusedError';
  readonly serverMessage: string;
  constructor(serverMessage: string) {
    super('SIDECAR_ERR_TOKEN_REFUSED', 503, `gentoken refused (HTTP 403): ${serverMessage}`);
    this.serverMessage = serverMessage;
  }
}

/**
 * Why a gentoken request failed without a 401/403/invalid body; each has its own /readyz message,
 * backoff and metric label (`token_request_failures_total{cause}`).
 */
export type TokenRequestKind = 'tls' | 'dns' | 'connection_refused' | 'timeout' | 'server_error' | 'rate_limited' | 'http' | 'egress_proxy' | 'unreachable';

/**
 * The auth server could not be reached or failed (network, TLS, timeout, 5xx). When it answered,
 * `upstreamStatus` is its HTTP status and `location` the redirect target (never followed), so
 * `doctor` can say what to change. `kind` classifies the failure; `retryAfter` is the raw
 * Retry-After header of a 429/503, parsed by the manager against its own clock.
 */
export class TokenRequestError extends SidecarError {
  override name = 'TokenRequestError';
  readonly upstreamStatus: number | undefined;
  readonly location: string | undefined;
  readonly kind: TokenRequestKind;
  readonly retryAfter: string | undefined;
  /**
   * Only a change of configuration can cure it (the service refused the client certificate, or
   * its absence): retried on the lockout-safe schedule, like refused credentials.
   */
  readonly configuration: boolean;
  constructor(message: string, options?: { cause?: unknown; upstreamStatus?: number; location?: string; kind?: TokenRequestKind; retryAfter?: string; configuration?: boolean }) {
    super('SIDECAR_ERR_TOKEN_REQUEST', 503, message, options);
    this.upstreamStatus = options?.upstreamStatus;
    this.location = options?.location;
    this.kind = options?.kind ?? 'unreachable';
    this.retryAfter = options?.retryAfter;
    this.configuration = options?.configuration ?? false;
  }
}

/** No valid token is held; `reason` is what clients and /readyz are told. */
export class TokenUnavailableError extends SidecarError {
  override name = 'TokenUnavailableError';
  constructor(reason: string) {
    super('SIDECAR_ERR_TOKEN_UNAVAILABLE', 503, reason);
  }
}

/** `start()` gave up because `stop()` or `drain()` was called first; everything it had started is stopped. */
export class StoppedDuringStartError extends SidecarError {
  override name = 'StoppedDuringStartError';
  constructor() {
    super('SIDECAR_ERR_STOPPED', 503, 'the sidecar was stopped during start-up');
  }
}
