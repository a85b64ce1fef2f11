import { connect, type Socket } from 'node:net';
import { SidecarError } from '../shared/errors.js';
import type { EgressProxy } from '../shared/egress-proxy.js';

import type { EgressProxyFailure } from '../observability/metrics.js';

/** Why a tunnel through the egress proxy failed; the label of b2b_sidecar_egress_proxy_failures_total. */
export type TunnelFailure = EgressProxyFailure;

/**
 * The egress proxy, not the upstream, failed. Its message names the proxy (password masked) and
 * the setting it came from, so a client's 502 body, the log and doctor all point at the proxy.
 */
export class EgressProxyError extends SidecarError {
  override name = 'EgressProxyError';
  readonly reason: TunnelFailure;
  /** The proxy's status line code for `auth` and `refused`. */
  readonly proxyStatus: number | undefined;
  constructor(reason: TunnelFailure, message: string, options?: { cause?: unknown; proxyStatus?: number }) {
    super('SIDECAR_ERR_EGRESS_PROXY', reason === 'timeout' ? 504 : 502, message, options);
    this.reason = reason;
    this.proxyStatus = options?.proxyStatus;
  }
}

/** A proxy that sends more than this before its blank line is not answering a CONNECT. */
const MAX_HEAD_BYTES = 16 * 1024;

/**
 * Opens a TCP connection to the proxy and asks it for a tunnel to `host:port` (RFC 9110 §9.3.6).
 * Resolves with the socket once the proxy answers 2xx; the caller then starts TLS with the
 * upstream over it, so the proxy sees only ciphertext and the certificate is checked as on a
 * direct connection. `auth` is `user:password` for Basic proxy authentication.
 */
export function openTunnel(proxy: EgressProxy, auth: string | undefined, host: string, port: number, timeoutMs: number): Promise<Socket> {
  const authority = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  const via = `the egress proxy ${proxy.display} (${proxy.source})`;
  return new Promise((resolve, reject) => {
    const socket = connect({ host: proxy.host, port: proxy.port });
    socket.setNoDelay(true);
    let connected = false;
    let head: Buffer = Buffer.alloc(0);
    let settled = false;
    const fail = (reason: TunnelFailure, message: string, extra?: { cause?: unknown; proxyStatus?: number }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      reject(new EgressProxyError(reason, message, extra));
    };
    const timer = setTimeout(() => fail('timeout', `${via} did not ${connected ? `answer the CONNECT to ${authority}` : 'accept a connection'} within ${timeoutMs} ms`), timeoutMs);
    const onData = (chunk: Buffer) => {
      head = head.length === 0 ? chunk : Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > MAX_HEAD_BYTES) fail('refused', `${via} sent no HTTP answer to CONNECT ${authority}`);
        return;
      }
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, Math.min(end, 64)).toString('latin1'));
      if (!status) return fail('refused', `${via} sent no HTTP answer to CONNECT ${authority}`);
      const code = Number(status[1]);
      // 407 is the status (RFC 9110 §15.5.8); tinyproxy 1.11 answers a failed Basic login with 401.
      if (code === 407 || code === 401) {
        return fail('auth', `${via} refused the tunnel: ${code} proxy authentication ${auth ? 'failed (check the user and password in the proxy URL or proxyAuthFile)' : 'required (set the user and password in the proxy URL or proxyAuthFile)'}`, { proxyStatus: code });
      }
      if (code < 200 || code > 299) return fail('refused', `${via} refused CONNECT ${authority} with ${code} (its rules may not allow this host or port)`, { proxyStatus: code });
      // Nothing may follow the 2xx before our ClientHello (the server speaks second in TLS), and
      // TLS reads the socket's handle directly, so bytes held here would be lost: refuse instead.
      if (head.length > end + 4) return fail('refused', `${via} sent data after its answer to CONNECT ${authority}, before TLS began`);
      settled = true;
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      resolve(socket);
    };
    const onError = (err: Error) => fail(connected ? 'closed' : 'unreachable',
      connected ? `${via} closed the tunnel to ${authority} (${(err as { code?: string }).code ?? err.message})` : `${via} is unreachable (${(err as { code?: string }).code ?? err.message})`,
      { cause: err });
    const onClose = () => fail('closed', `${via} closed the connection before answering CONNECT ${authority}`);
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
    socket.once('connect', () => {
      connected = true;
      const lines = [`CONNECT ${authority} HTTP/1.1`, `Host: ${authority}`];
      if (auth) lines.push(`Proxy-Authorization: Basic ${Buffer.from(auth, 'utf8').toString('base64')}`);
      socket.write(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
    });
  });
}
