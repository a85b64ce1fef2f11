import type { Socket } from 'node:net';
import type { Agent as HttpsAgent } from 'node:https';
import type { SecureContext } from 'node:tls';
import { tlsContext, type ClientCertificatePem, type TrustedCas } from '../shared/tls.js';
import { askedForClientCertificate, closedAfterCertificateRequest, negotiatedTls13 } from '../shared/tls-alert.js';
// undici's own connector, imported file by file like undici-core.ts (so the bundle holds it).
import connectModule from 'undici/lib/core/connect.js';
import { EgressProxyError, openTunnel, type TunnelFailure } from './connect-tunnel.js';
import type { EgressProxy } from '../shared/egress-proxy.js';

const buildConnector = connectModule as unknown as (options: Record<string, unknown>) => UndiciConnector;

type UndiciConnector = (options: { hostname: string; host: string; protocol: string; port: string; servername?: string; httpSocket?: Socket }, callback: (err: Error | null, socket: Socket | null) => void) => void;

/**
 * How connections to one upstream leave this host: the trusted CAs, the client certificate
 * current now (mutual TLS, reloaded while running) and the forward proxy, if any. Every client
 * of an upstream (proxy engines, the token client, the localization client, doctor) connects
 * through this, so a setting reaches all of them.
 */
export interface Egress {
  /** Metrics and messages: `service` or `localization`. */
  readonly route: string;
  readonly ca: TrustedCas | undefined;
  readonly proxy: EgressProxy | undefined;
  /** The client certificate new connections present, if any. */
  clientCertificate(): ClientCertificatePem | undefined;
  /** The TLS context for a new connection. */
  context(): SecureContext | undefined;
  /** A tunnel through the proxy to `host:port`; only when `proxy` is set. */
  tunnel(host: string, port: number): Promise<Socket>;
}

export interface EgressOptions {
  route: string;
  ca: TrustedCas | undefined;
  proxy?: EgressProxy | undefined;
  /** `user:password` for the proxy now (a proxyAuthFile is re-read; the URL's user otherwise). */
  proxyAuth?: () => string | undefined;
  clientCertificate?: () => ClientCertificatePem | undefined;
  /** Deadline for the proxy to accept and answer the CONNECT (undici's connect timeout is 10 s too). */
  tunnelTimeoutMs?: number;
  onTunnelFailure?: (reason: TunnelFailure, message: string) => void;
}

export function createEgress(options: EgressOptions): Egress {
  const identity = options.clientCertificate ?? (() => undefined);
  const proxy = options.proxy;
  const auth = options.proxyAuth ?? (() => proxy?.urlAuth);
  return {
    route: options.route,
    ca: options.ca,
    proxy,
    clientCertificate: identity,
    context: () => tlsContext(options.ca, identity()),
    tunnel(host, port) {
      if (!proxy) return Promise.reject(new Error('no egress proxy'));
      return openTunnel(proxy, auth(), host, port, options.tunnelTimeoutMs ?? 10_000).catch((err: unknown) => {
        if (err instanceof EgressProxyError) options.onTunnelFailure?.(err.reason, err.message);
        throw err;
      });
    },
  };
}

/** True when connections need more than a fixed TLS context: a proxy, or a pair that may be reloaded. */
function isDynamic(egress: Egress | undefined): egress is Egress {
  return egress !== undefined && (egress.proxy !== undefined || egress.clientCertificate() !== undefined);
}

/**
 * undici's `connect` option. Without a proxy or client certificate: undici's own connector with the
 * options the engines always used. Otherwise a connector that opens the tunnel first and starts TLS
 * over it (undici's `httpSocket`), with a connector per TLS context: a resumed TLS session would
 * present the old client certificate after a rotation, so a new pair starts a new session cache.
 * Either way a TLS alert the server sends after the handshake is kept (keepingTlsAlerts).
 */
export function undiciConnect(egress: Egress | undefined, ca: TrustedCas | undefined, servername: string | undefined): UndiciConnector {
  const fixed = { ...(ca ? { secureContext: tlsContext(ca, undefined) } : {}), rejectUnauthorized: true, ...(servername ? { servername } : {}) };
  if (!isDynamic(egress)) return keepingTlsAlerts(buildConnector(fixed));
  let current: { context: SecureContext | undefined; connect: UndiciConnector } | undefined;
  const connectorNow = (): UndiciConnector => {
    const context = egress.context();
    if (!current || current.context !== context) {
      current = { context, connect: buildConnector({ ...(context ? { secureContext: context } : {}), rejectUnauthorized: true, ...(servername ? { servername } : {}) }) };
    }
    return current.connect;
  };
  return keepingTlsAlerts((opts, callback) => {
    const connect = connectorNow();
    if (!egress.proxy) return connect(opts, callback);
    const port = Number(opts.port) || (opts.protocol === 'http:' ? 80 : 443);
    egress.tunnel(opts.hostname.replace(/^\[|\]$/g, ''), port).then(
      (socket) => {
        try {
          if (opts.protocol === 'https:') connect({ ...opts, httpSocket: socket }, callback);
          else callback(null, socket);
        } catch (err) {
          // A throw here would be an unhandled rejection and leave undici waiting: fail this connect.
          socket.destroy();
          callback(err as Error, null);
        }
      },
      (err: Error) => callback(err, null),
    );
  });
}

/**
 * A TLS 1.3 server refuses a client certificate with an alert after the handshake; the socket
 * reports it as an error, but undici then reports the end of the stream as "other side closed"
 * (UND_ERR_SOCKET) and the alert is lost (docs/traps.md T62). This keeps the alert as that later
 * error's `cause`, where upstream-error.ts and the token client find it. One listener per
 * connection; nothing per request.
 */
function keepingTlsAlerts(connect: UndiciConnector): UndiciConnector {
  return (opts, callback) => connect(opts, (err, socket) => {
    if (socket) {
      let alert: Error | undefined;
      // Asked now: by the time undici reports the close, the TLS handle is gone.
      const asked = askedForClientCertificate(socket);
      const tls13 = negotiatedTls13(socket);
      socket.prependListener('error', (e: Error & { code?: string; cause?: unknown }) => {
        if (/^ERR_SSL_.*_ALERT_/.test(e.code ?? '')) alert ??= e;
        else if (e.code === 'UND_ERR_SOCKET' && e.cause === undefined) {
          // Not one byte of answer on a connection whose server asked for a certificate: the
          // refusal of a server that closes without an alert (Node's own TLS server does).
          const cause = alert ?? closedAfterCertificateRequest(socket, asked, tls13);
          if (cause) e.cause = cause;
        }
      });
    }
    callback(err, socket);
  });
}

/**
 * The same for a node:https Agent (the http-proxy engine): the context of the current pair on
 * every new socket, and with a proxy, TLS started over the tunnel. Node's Agent waits for the
 * callback when createConnection returns nothing; the prototype's createConnection keeps its TLS
 * session cache, emptied whenever the client certificate changes.
 */
export function routeAgentThroughEgress(agent: HttpsAgent, egress: Egress | undefined): void {
  if (!isDynamic(egress)) return;
  type Create = (options: Record<string, unknown>, oncreate: (err: Error | null, socket?: Socket) => void) => Socket | undefined;
  const create = (agent as unknown as { createConnection: Create }).createConnection.bind(agent) as Create;
  let sessionsOf: SecureContext | undefined;
  (agent as unknown as { createConnection: Create }).createConnection = (options, oncreate) => {
    const context = egress.context();
    if (context !== sessionsOf) {
      // A resumed session would present the previous client certificate (docs/traps.md T39).
      (agent as unknown as { _sessionCache?: { map: Record<string, unknown>; list: string[] } })._sessionCache = { map: {}, list: [] };
      sessionsOf = context;
    }
    const tlsOptions = { ...options, ...(context ? { secureContext: context } : {}) };
    if (!egress.proxy) return create(tlsOptions, oncreate);
    egress.tunnel(String(options.host), Number(options.port) || 443).then(
      (socket) => {
        try {
          oncreate(null, create({ ...tlsOptions, socket }, oncreate));
        } catch (err) {
          socket.destroy();
          oncreate(err as Error);
        }
      },
      (err: Error) => oncreate(err),
    );
    return undefined;
  };
}
