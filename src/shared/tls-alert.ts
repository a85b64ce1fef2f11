/**
 * A server's refusal of this client's certificate, told apart from every other failure
 * (docs/traps.md T62). Under TLS 1.2 a server refuses a client certificate inside the handshake;
 * under TLS 1.3 the client's handshake is over before the server has judged its certificate, so
 * the refusal arrives as an alert on the first read, after the request was written: Node reports
 * it as `ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED` (or `…_BAD_CERTIFICATE`, `…_UNKNOWN_CA`, with
 * "SSL alert number N" in the message). An alert in a client's error is always the server's word:
 * the client's own verdicts on the server's certificate have other codes (`UNABLE_TO_…`, `CERT_…`).
 */

/** The alerts a server sends about the client's certificate (RFC 8446 §6.2), by number. */
const CLIENT_CERTIFICATE_ALERTS: ReadonlyMap<number, string> = new Map([
  [42, 'bad certificate'],
  [43, 'unsupported certificate'],
  [44, 'certificate revoked'],
  [45, 'certificate expired'],
  [46, 'certificate unknown'],
  [48, 'unknown ca'],
  [116, 'certificate required'],
]);
const BY_NAME: ReadonlyMap<string, number> = new Map([...CLIENT_CERTIFICATE_ALERTS].map(([n, name]) => [name.replace(/ /g, '_').toUpperCase(), n]));

/** A client-certificate alert found on the error or its causes. */
export interface ClientCertificateAlert {
  /** The alert's name as RFC 8446 spells it, e.g. "certificate required". */
  name: string;
  /** 0: no alert at all, the connection closed (CLOSED_AFTER_CERTIFICATE_REQUEST). */
  number: number;
  /** No certificate was presented (certificate required), rather than one refused. */
  missing: boolean;
}

/** The client-certificate alert the server sent, if the error (or one of its causes) is one. */
export function clientCertificateAlert(err: unknown): ClientCertificateAlert | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    if ((current as { code?: unknown }).code === CLOSED_AFTER_CERTIFICATE_REQUEST) return { name: 'none', number: 0, missing: false };
    const found = alertOf(current as { code?: unknown; message?: unknown });
    if (found !== undefined) {
      const name = CLIENT_CERTIFICATE_ALERTS.get(found);
      return name ? { name, number: found, missing: found === 116 } : undefined;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** The alert number an error carries (from its code, else its OpenSSL message), if any. */
function alertOf(e: { code?: unknown; message?: unknown }): number | undefined {
  const code = typeof e.code === 'string' ? /^ERR_SSL_(?:TLSV13|TLSV1|SSLV3|SSL\/TLS)_ALERT_([A-Z_]+)$/.exec(e.code) : null;
  if (code) return BY_NAME.get(code[1]!) ?? -1;
  const number = typeof e.message === 'string' ? /SSL alert number (\d+)/.exec(e.message) : null;
  return number ? Number(number[1]) : undefined;
}

/**
 * What the operator reads: who refused (e.g. "the auth server"), the alert, and the keys to check
 * for `prefix` (the route's config section, e.g. `service`).
 */
export function clientCertificateRefusal(alert: ClientCertificateAlert, who: string, prefix: string): string {
  return alert.missing
    ? `${who} refused the connection without a client certificate (TLS alert: ${alert.name}): it requires mutual TLS; set ${prefix}.certFile and ${prefix}.keyFile to the pair the vendor issued`
    : `${who} refused the client certificate (TLS alert: ${alert.name}): check ${prefix}.certFile and ${prefix}.keyFile with the vendor (another CA, expired or revoked)`;
}

/**
 * The words added to a reset or closed connection (`alert.number` 0: no alert) whose server had
 * asked for a client certificate: a refusal is likely, but a server shedding load or restarting
 * closes fresh connections the same way, so the failure keeps its own kind and only gains the hint.
 */
export function clientCertificateHint(prefix: string): string {
  return `; the server had asked for a client certificate and closed the new connection before answering, with no TLS alert: if this persists, check ${prefix}.certFile and ${prefix}.keyFile with the vendor`;
}

/**
 * The code of the error kept as the cause when a server that asked for a client certificate
 * closed the connection before a single byte of answer, with no alert (Node's own TLS server
 * does this when it rejects a client certificate).
 */
export const CLOSED_AFTER_CERTIFICATE_REQUEST = 'SIDECAR_ERR_TLS_CLOSED_AFTER_CERTIFICATE_REQUEST';

/**
 * Whether the server asked this TLS socket for a client certificate: OpenSSL fills the shared
 * signature algorithms on the client only from a CertificateRequest (TLS 1.2 and 1.3). Ask it
 * while the connection is open; false for anything else.
 */
export function askedForClientCertificate(socket: unknown): boolean {
  const tls = socket as { getSharedSigalgs?: () => string[] } | null | undefined;
  if (!tls || typeof tls.getSharedSigalgs !== 'function') return false;
  try {
    return tls.getSharedSigalgs().length > 0;
  } catch {
    return false; // the TLS handle is gone
  }
}

/** Whether the socket negotiated TLS 1.3 (ask while the connection is open). */
export function negotiatedTls13(socket: unknown): boolean {
  const tls = socket as { getProtocol?: () => string | null } | null | undefined;
  try {
    return typeof tls?.getProtocol === 'function' && tls.getProtocol() === 'TLSv1.3';
  } catch {
    return false;
  }
}

/**
 * For a connection that ended with an error: when its server had asked for a client certificate
 * (`asked`) and not one byte of answer came, the refusal of a server that closes without an alert,
 * as an error to keep as the cause; else undefined.
 */
export function closedAfterCertificateRequest(
  socket: unknown, asked = askedForClientCertificate(socket), tls13 = negotiatedTls13(socket),
): Error | undefined {
  // Under TLS 1.2 a refusal always comes as an alert inside the handshake: no guess is needed there.
  if (!asked || !tls13 || (socket as { bytesRead?: number } | null | undefined)?.bytesRead !== 0) return undefined;
  return Object.assign(new Error('closed after asking for a client certificate'), { code: CLOSED_AFTER_CERTIFICATE_REQUEST });
}
