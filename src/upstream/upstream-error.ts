import { SidecarError } from '../shared/errors.js';
import { clientCertificateAlert, clientCertificateHint, clientCertificateRefusal } from '../shared/tls-alert.js';

/** What a client is told when the upstream exchange fails before response headers. */
export interface ErrorAnswer {
  status: number;
  message: string;
}

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT', 'ESOCKETTIMEDOUT', 'SIDECAR_ERR_UPSTREAM_TIMEOUT']);
const REFUSED_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET', 'UND_ERR_CLOSED', 'ERR_STREAM_PREMATURE_CLOSE', 'HPE_INVALID_CONSTANT', 'UND_ERR_RESPONSE_STATUS_CODE']);
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN']);
const TLS_CODE = /^(ERR_TLS_|ERR_SSL_|CERT_|UNABLE_TO_|DEPTH_ZERO_|SELF_SIGNED_|HOSTNAME_MISMATCH)/;

/**
 * The single mapping from an upstream failure to the client's status and message (fastify
 * reply-from's taxonomy). Messages are fixed strings: upstream internals and secrets never
 * reach the client. `route` names the config section a refused client certificate comes from.
 */
export function answerForUpstreamError(err: unknown, route = 'service'): ErrorAnswer {
  if (err instanceof SidecarError && err.code !== 'SIDECAR_ERR_UPSTREAM_TIMEOUT') {
    return { status: err.status, message: err.message };
  }
  // Before the codes: under TLS 1.3 the refusal arrives after the handshake, as a reset or a closed socket.
  const alert = clientCertificateAlert(err);
  if (alert && alert.number !== 0) return { status: 502, message: clientCertificateRefusal(alert, 'the service', route) };
  const answer = answerByCode(errorCode(err));
  // No alert, only a close after a certificate request: the failure as it is, with the hint.
  return alert ? { status: answer.status, message: answer.message + clientCertificateHint(route) } : answer;
}

function answerByCode(code: string): ErrorAnswer {
  if (TIMEOUT_CODES.has(code)) return { status: 504, message: 'the service did not answer in time' };
  if (REFUSED_CODES.has(code)) return { status: 502, message: 'the service refused the connection' };
  if (RESET_CODES.has(code)) return { status: 502, message: 'the connection to the service was reset' };
  if (DNS_CODES.has(code)) return { status: 502, message: 'the service host name could not be resolved' };
  if (TLS_CODE.test(code)) return { status: 502, message: 'the service TLS certificate could not be verified' };
  return { status: 502, message: 'the request to the service failed' };
}

/** The most specific `code` on an error or its causes. */
export function errorCode(err: unknown): string {
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_CONNECT' && code !== 'UND_ERR_REQ_RETRY') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return 'UNKNOWN';
}
