import { InvalidResponseError, TokenRefusedError, TokenRequestError, TokenUnauthorizedError } from '../../shared/errors.js';
import type { GentokenCause } from '../../observability/metrics.js';

/** The metric and /readyz class of whatever a gentoken attempt threw. */
export function causeOf(err: unknown): GentokenCause {
  if (err instanceof TokenUnauthorizedError) return 'unauthorized';
  if (err instanceof TokenRefusedError) return 'refused';
  if (err instanceof InvalidResponseError) return 'invalid_response';
  if (err instanceof TokenRequestError) return err.kind;
  return 'unreachable';
}

/**
 * The /readyz message (and the 503 body) of each failure cause: what happened and what to do.
 * `detail` is the failure's own secret-free words (TLS detail, HTTP status); `retryAfterMs` what is
 * left of a Retry-After.
 */
export function failureReason(failure: GentokenCause, detail: string, retryAfterMs: number): string {
  switch (failure) {
    case 'unauthorized': return 'credentials rejected by the auth server';
    case 'refused':
      return 'gentoken refused (HTTP 403): this host\'s egress address is most likely not on the vendor\'s allow list; give the vendor\'s support team the egress address';
    case 'tls':
      // A refused handshake (a client certificate required) or a key Node refuses is no trust problem.
      if (/^TLS: the auth server refused the (client certificate|connection without a client certificate) \(TLS alert/.test(detail)) return detail.replace(/^TLS: /, '');
      return /refused the handshake|KEY_TOO_SMALL/.test(detail) ? `auth server TLS handshake failed: ${detail}` : `auth server certificate not trusted: ${detail}`;
    case 'dns': return 'auth server name not found (DNS); check service.baseUrl and this host\'s resolver';
    case 'connection_refused': return 'auth server refused the connection; check service.baseUrl and the egress path';
    case 'timeout': return 'auth server timed out';
    case 'egress_proxy': return detail || 'the egress proxy failed';
    case 'server_error': return `auth server failed (${detail.replace(/^auth server answered /, '')})`;
    case 'rate_limited':
      return retryAfterMs > 0
        ? `auth server asked to slow down (Retry-After); no gentoken call for ${Math.ceil(retryAfterMs / 1000)} s`
        : 'auth server asked to slow down (HTTP 429)';
    case 'invalid_response': return 'auth server sent an invalid response';
    case 'http': return detail || 'auth server answered an unexpected HTTP status';
    default: return 'auth server unreachable';
  }
}
