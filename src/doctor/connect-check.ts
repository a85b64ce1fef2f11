import { lookup } from 'node:dns/promises';
import { connect as tcpConnect, isIP, type Socket } from 'node:net';
import { checkServerIdentity, connect as tlsConnect, type ConnectionOptions, type DetailedPeerCertificate, type PeerCertificate, type SecureContext, type TLSSocket } from 'node:tls';
import { EgressProxyError, type TunnelFailure } from '../upstream/connect-tunnel.js';
import type { Egress } from '../upstream/egress.js';
import { clampDelay } from '../shared/clock.js';
import { trustContext, type TrustedCas } from '../shared/tls.js';
import type { DoctorStep } from './doctor-report.js';

/** Options of {@link checkConnection}. */
export interface ConnectCheckOptions {
  /** `service.baseUrl`. */
  url: URL;
  /** Trusted CAs (system roots + `service.caFile`), undefined for the system roots alone. */
  ca: TrustedCas | undefined;
  /** `service.caFile`, named in hints. */
  caFile: string | undefined;
  /** Deadline for each of TCP connect and TLS handshake, in milliseconds. */
  timeoutMs: number;
  /** The way out run uses: a forward proxy (the CONNECT step replaces DNS and TCP) and the client certificate. */
  egress?: Egress | undefined;
  /** The client certificate offered, to show in the step. */
  clientCertificate?: { subject: string; notAfter: Date; key: string } | undefined;
}

const PROXY_HINTS: Record<TunnelFailure, string> = {
  unreachable: 'nothing accepts connections at the proxy address: check service.proxy (or HTTPS_PROXY), or set service.proxy: none if this host reaches the service directly',
  auth: 'the proxy wants other credentials: check the user and password in service.proxy or service.proxyAuthFile',
  refused: 'the proxy does not allow a tunnel to this host and port (e.g. squid allows CONNECT to port 443 only): ask its administrators, or check service.baseUrl',
  closed: 'the proxy closed the connection: it may not be an HTTP proxy (a SOCKS port?), or it drops this destination',
  timeout: 'the proxy did not answer: check the proxy address and the firewall between this host and it',
};

/** Chain errors that mean "not signed by anything trusted" (rather than expired or revoked). */
const UNTRUSTED = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_UNTRUSTED', 'CERT_SIGNATURE_FAILURE',
]);

/**
 * DNS, then TCP, then the TLS handshake with the chain and the name checked separately, so the
 * step says which one failed: the sidecar's own connections report all of them as one error.
 */
export async function checkConnection(o: ConnectCheckOptions): Promise<DoctorStep> {
  const host = o.url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(o.url.port || (o.url.protocol === 'http:' ? 80 : 443));
  const fail = (detail: string, hint: string): DoctorStep => ({ step: 'connect', ok: false, detail, hint });
  if (o.egress?.proxy) {
    // Through the proxy: it resolves the name and opens the TCP connection; its CONNECT answer is the step.
    const via = `via proxy ${o.egress.proxy.display} (${o.egress.proxy.source})`;
    let tunnel: Socket;
    try {
      tunnel = await o.egress.tunnel(host, port);
    } catch (err) {
      if (err instanceof EgressProxyError) return fail(`${via}: ${err.message}`, PROXY_HINTS[err.reason]);
      return fail(`${via}: ${(err as Error).message}`, PROXY_HINTS.unreachable);
    }
    return afterTcp(o, host, tunnel, `${via}: CONNECT ${host}:${port} established`);
  }

  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((a) => a.address);
  } catch (err) {
    return fail(`DNS lookup of ${host} failed (${codeOf(err)})`, 'check the host name in service.baseUrl, and that this machine can resolve it (DNS, /etc/hosts)');
  }
  const resolved = isIP(host) ? '' : `${host} resolved to ${addresses.join(', ')}; `;

  let socket: Socket | undefined;
  let lastError = '';
  for (const address of addresses) {
    const attempt = await connectTcp(address, port, o.timeoutMs);
    if ('socket' in attempt) {
      socket = attempt.socket;
      break;
    }
    lastError = attempt.error;
  }
  if (!socket) {
    const where = `${addresses.length > 1 ? addresses.join(' and ') : addresses[0]} port ${port}`;
    if (lastError === 'ETIMEDOUT') {
      return fail(`${resolved}TCP connection to ${where}: no answer within ${o.timeoutMs} ms`,
        'a firewall may drop the traffic, or the service admits only registered client addresses: ask the support team to allow this machine\'s address');
    }
    if (lastError === 'ECONNREFUSED') {
      return fail(`${resolved}TCP connection to ${where} refused (ECONNREFUSED)`, 'nothing listens there: check the port in service.baseUrl');
    }
    return fail(`${resolved}TCP connection to ${where} failed (${lastError})`, 'check the network route to the service (proxy, firewall, VPN)');
  }
  return afterTcp(o, host, socket, `${resolved}TCP ${socket.remoteAddress ?? host} port ${port} open`);
}

/** The TLS half of the step, on a direct socket or a tunnel. */
async function afterTcp(o: ConnectCheckOptions, host: string, socket: Socket, tcp: string): Promise<DoctorStep> {
  const fail = (detail: string, hint: string): DoctorStep => ({ step: 'connect', ok: false, detail, hint });
  if (o.url.protocol === 'http:') {
    socket.destroy();
    return { step: 'connect', ok: true, detail: `${tcp}; no TLS (http://, service.allowInsecureHttp)` };
  }

  const handshake = await handshakeTls(socket, host, o.egress ? o.egress.context() : trustContext(o.ca), o.timeoutMs);
  if ('error' in handshake) {
    const weak = weakKey(handshake.error, handshake.message, handshake.cert);
    if (weak) return fail(`${tcp}; ${weak}`, WEAK_KEY_HINT);
    return fail(`${tcp}; TLS handshake failed (${handshake.error})`, 'the port may not speak TLS (an http:// port?) or a middlebox interferes: check the scheme and port of service.baseUrl');
  }
  const roots = o.caFile ? `system roots + service.caFile ${o.caFile}` : 'system roots';
  if ('chainError' in handshake) {
    const { chainError: code, cert } = handshake;
    const weak = weakKey(code, handshake.message, cert);
    if (weak) return fail(`${tcp}; ${weak}`, WEAK_KEY_HINT);
    const issuer = describeName(cert?.issuer);
    if (code === 'CERT_HAS_EXPIRED' || code === 'CERT_NOT_YET_VALID') {
      return fail(`${tcp}; certificate chain invalid (${code}: valid ${cert?.valid_from ?? '?'} to ${cert?.valid_to ?? '?'})`,
        'the service must renew its certificate (tell the support team), or this machine\'s clock is wrong');
    }
    if (UNTRUSTED.has(code)) {
      return fail(`${tcp}; certificate chain not trusted against ${roots} (${code}; issuer ${issuer})`,
        o.caFile
          ? `service.caFile (${o.caFile}) does not hold the CA that signed the service's certificate (${issuer}): put that CA's PEM certificate in it`
          : `the service's certificate is not signed by a CA in the system roots: set service.caFile to a PEM file holding the CA that signed it (${issuer})`);
    }
    return fail(`${tcp}; certificate rejected (${code})`, 'ask the support team which CA signs the service\'s certificate; set service.caFile to it');
  }
  const { cert } = handshake;
  const mismatch = checkServerIdentity(host, cert);
  if (mismatch) {
    const names = certificateNames(cert);
    return fail(`${tcp}; chain trusted (${roots}), but the certificate does not cover ${host} (it names ${names || 'no host'})`,
      names ? `use a host the certificate names in service.baseUrl (${names}), or ask the support team for a certificate that covers ${host}` : `ask the support team for a certificate that covers ${host}`);
  }
  const asked = handshake.askedForClientCertificate;
  const mine = o.clientCertificate;
  const offered = mine
    ? `; ${asked ? 'the server asked for a client certificate: ' : ''}client certificate ${mine.subject} (${mine.key}.certFile, valid to ${mine.notAfter.toISOString()}) offered${asked ? '' : ', but the server did not ask for one'}`
    : asked ? '; the server asked for a client certificate, and none is configured' : '';
  const detail = `${tcp}; TLS chain trusted (${roots}); certificate covers ${host}${offered}`;
  if (asked && !mine) {
    // A server may ask and accept none (ssl_verify_client optional): the next steps tell; say what to set.
    return { step: 'connect', ok: true, detail, hint: 'if requests are refused (nginx answers 400 "No required SSL certificate was sent"), set service.certFile and service.keyFile to the pair the vendor issued' };
  }
  return { step: 'connect', ok: true, detail };
}

function connectTcp(address: string, port: number, timeoutMs: number): Promise<{ socket: Socket } | { error: string }> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host: address, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ error: 'ETIMEDOUT' });
    }, clampDelay(timeoutMs));
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve({ socket });
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      resolve({ error: codeOf(err) });
    });
  });
}

/**
 * The handshake on the open socket, with the chain verified as production verifies it (system
 * roots + caFile, rejectUnauthorized). The name is checked by the caller with Node's own
 * `checkServerIdentity`, so a bad chain and a wrong name are told apart. The peer certificate
 * is read when it arrives (the OCSP status callback runs before verification), so a rejected
 * chain can still name its issuer. Nothing is ever sent on this connection.
 */
function handshakeTls(socket: Socket, host: string, secureContext: SecureContext | undefined, timeoutMs: number): Promise<{ cert: PeerCertificate; askedForClientCertificate: boolean } | { chainError: string; message: string; cert: DetailedPeerCertificate | undefined } | { error: string; message: string; cert: DetailedPeerCertificate | undefined }> {
  return new Promise((resolve) => {
    let received: DetailedPeerCertificate | undefined;
    // `requestOCSP` is passed on to the TLSSocket by connect() but missing from its option type.
    const options: ConnectionOptions & { requestOCSP: boolean } = {
      socket,
      // SNI carries host names only (RFC 6066 §3).
      ...(isIP(host) ? {} : { servername: host }),
      ...(secureContext ? { secureContext } : {}),
      ALPNProtocols: ['http/1.1'],
      rejectUnauthorized: true,
      // Called only once the chain is trusted; the name verdict is the caller's, reported apart.
      checkServerIdentity: () => undefined,
      requestOCSP: true,
    };
    const tls = tlsConnect(options);
    // With its issuers: a key too small may be the CA's.
    tls.once('OCSPResponse', () => void (received = tls.getPeerCertificate(true)));
    const timer = setTimeout(() => {
      tls.destroy();
      resolve({ error: `no handshake within ${timeoutMs} ms`, message: '', cert: received });
    }, clampDelay(timeoutMs));
    tls.once('secureConnect', () => {
      clearTimeout(timer);
      const cert = tls.getPeerCertificate();
      // OpenSSL fills the shared signature algorithms on the client only from a CertificateRequest
      // (TLS 1.2 and 1.3): empty means the server did not ask for a client certificate.
      const askedForClientCertificate = tls.getSharedSigalgs().length > 0;
      tls.destroy();
      resolve({ cert, askedForClientCertificate });
    });
    tls.once('error', (err) => {
      clearTimeout(timer);
      tls.destroy();
      // A verification failure sets authorizationError before the socket is torn down.
      const verdict = (tls as TLSSocket & { authorizationError?: Error | string }).authorizationError;
      resolve(verdict ? { chainError: String(verdict), message: err.message, cert: received } : { error: codeOf(err), message: err.message, cert: received });
    });
  });
}

const WEAK_KEY_HINT = 'the vendor must move its certificate to a larger key (RSA 2048 bits or more, or an EC key): tell the support team. This runtime refuses the handshake whatever the configuration, and turning verification off is never the answer';

/**
 * From Node 24.5 OpenSSL runs at security level 2 and refuses RSA, DSA and DH keys under 2048
 * bits and EC keys under 224 bits, in the service's certificate (`EE_KEY_TOO_SMALL`, "EE
 * certificate key too weak"; Node reports the code as `UNSPECIFIED`) or in a CA above it. The
 * sentence naming the key and its size, or undefined when the failure is something else.
 */
export function weakKey(code: string, message: string, cert: DetailedPeerCertificate | undefined): string | undefined {
  const text = `${code} ${message}`;
  const ee = /EE_KEY_TOO_SMALL|EE certificate key too weak|ee key too small/i.test(text);
  const ca = /CA_KEY_TOO_SMALL|CA certificate key too weak|ca key too small/i.test(text);
  if (!ee && !ca) return undefined;
  if (ee) return `the service's certificate key is ${describeKey(cert)}; ${requirement(cert)} (${code})`;
  // The first certificate above the leaf whose key is under the level.
  const seen = new Set<DetailedPeerCertificate>();
  for (let c = cert?.issuerCertificate; c && !seen.has(c); c = c.issuerCertificate) {
    seen.add(c);
    if (c.bits !== undefined && c.bits < (isEc(c) ? 224 : 2048)) return `the key of the CA ${describeName(c.subject)} in the service's chain is ${describeKey(c)}; ${requirement(c)} (${code})`;
  }
  return `a CA certificate in the service's chain has a key that is too small; ${requirement(undefined)} (${code})`;
}

function isEc(cert: PeerCertificate | undefined): boolean {
  return cert?.asn1Curve !== undefined || cert?.nistCurve !== undefined;
}

function describeKey(cert: PeerCertificate | undefined): string {
  if (cert?.bits === undefined) return 'too small';
  return isEc(cert) ? `${cert.bits} bits (EC ${cert.nistCurve ?? cert.asn1Curve})` : `${cert.bits} bits`;
}

function requirement(cert: PeerCertificate | undefined): string {
  return isEc(cert) ? 'Node needs an EC curve of 224 bits or more' : 'Node needs 2048 bits or more';
}

/** `CN=ca1, O=Joyent`: enough to recognise a CA without dumping the whole subject. */
function describeName(name: PeerCertificate['issuer'] | undefined): string {
  const parts = (['CN', 'O'] as const).flatMap((k) => {
    // Typed as a string, but Node gives an array for an attribute that occurs more than once.
    const v: string | string[] | undefined = name?.[k];
    return v === undefined ? [] : [`${k}=${Array.isArray(v) ? v.join('+') : v}`];
  });
  return parts.length ? parts.join(', ') : 'unknown';
}

/** The names a certificate covers: its subjectAltName entries, else (as Node falls back) its CN. */
function certificateNames(cert: PeerCertificate): string {
  if (cert.subjectaltname) return cert.subjectaltname.split(', ').map((n) => n.replace(/^(DNS|IP Address):/, '')).join(', ');
  const cn = cert.subject?.CN;
  return Array.isArray(cn) ? cn.join(', ') : (cn ?? '');
}

function codeOf(err: unknown): string {
  return (err as { code?: string } | undefined)?.code ?? (err instanceof Error ? err.message : String(err));
}
