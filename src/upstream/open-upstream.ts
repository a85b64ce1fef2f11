import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { Environment } from '../shared/egress-proxy.js';
import type { SecretSet } from '../shared/secrets.js';
import { loadTrustedCas, type TrustedCas } from '../shared/tls.js';
import { compileRoute, type RouteDeadlines, type RouteName, type RoutePolicy } from '../shared/routes.js';
import type { UpstreamSettings } from '../shared/upstream-keys.js';
import type { TunnelFailure } from './connect-tunnel.js';
import { createProxyEngine } from './create-engine.js';
import type { EngineOptions, ProxyEngine } from './engine.js';
import { startEgress, type EgressHandle } from './egress-settings.js';

/** What an upstream needs besides its settings. */
export interface UpstreamDeps {
  /** Where HTTPS_PROXY and NO_PROXY are read. */
  env: Environment;
  secrets: SecretSet;
  logger?: Logger | undefined;
  /** Watch the proxy credential and client certificate files (run); a command that connects once does not. */
  watch?: boolean;
  /** The egress gauges and counters of this route (run). */
  metrics?: Pick<Metrics, 'egressProxyFailed' | 'egressProxyInUse' | 'clientCertificate'> | undefined;
  now?: () => Date;
  /** Aborted when the process stops during start-up: a client key being decrypted is given up. */
  signal?: AbortSignal | undefined;
}

/** Something built on an upstream that holds connections. */
export interface Closable {
  close(): unknown;
}

/** The transport settings of an engine; the upstream adds its address, trust, way out and its route's deadlines. */
export type TransportOptions = Omit<EngineOptions, 'baseUrl' | 'ca' | 'egress' | keyof RouteDeadlines>;

/** One route's upstream: its trust, its way out, and everything built on them, closed together. */
export interface Upstream {
  readonly route: RouteName;
  /** The route's policy (shared/routes.ts), compiled once from `settings`: prefix, methods, deadlines. */
  readonly policy: RoutePolicy;
  readonly settings: UpstreamSettings;
  readonly baseUrl: URL;
  /** System roots plus `caFile`; undefined for Node's defaults. */
  readonly ca: TrustedCas | undefined;
  /** The forward proxy and client certificate; `reload()` re-reads their files (SIGHUP). */
  readonly egress: EgressHandle;
  /** Engine options to this upstream: `transport` plus its address, trust, way out and the route's deadlines. */
  engineOptions(transport: TransportOptions): EngineOptions;
  /** A proxy engine to this upstream, closed with it. */
  engine(kind: 'undici' | 'http-proxy', transport: TransportOptions): Promise<ProxyEngine>;
  /** Registers a client built on this upstream (the gentoken or localization client) to be closed with it; returns it. */
  adopt<T extends Closable>(client: T): T;
  /** Closes every engine and client made on it (newest first), then the egress's file watch. Idempotent. */
  close(): Promise<void>;
}

/** Why an upstream could not be opened: its CA file (`ca`) or its way out (`egress`); the message names the file or key. */
export class UpstreamOpenError extends Error {
  constructor(readonly stage: 'ca' | 'egress', cause: Error) {
    super(cause.message, { cause });
    this.name = 'UpstreamOpenError';
  }
}

/**
 * Opens the upstream of `route` from its config section: compiles the route's policy, loads the CA, starts the egress (the
 * forward proxy and its credentials, the client certificate). Every command and part that talks
 * to a server starts here, and builds its engine or client on the result.
 * @throws UpstreamOpenError naming the file or key that cannot be used; nothing is left open.
 */
export async function openUpstream(route: RouteName, settings: UpstreamSettings, deps: UpstreamDeps): Promise<Upstream> {
  const policy = compileRoute(route, settings);
  const baseUrl = new URL(settings.baseUrl);
  let ca: TrustedCas | undefined;
  try {
    ca = loadTrustedCas(settings.caFile);
  } catch (err) {
    throw new UpstreamOpenError('ca', err as Error);
  }
  const { metrics } = deps;
  let egress: EgressHandle;
  try {
    egress = await startEgress(settings, {
      route, target: baseUrl, ca, env: deps.env, secrets: deps.secrets, logger: deps.logger,
      ...(deps.watch !== undefined ? { watch: deps.watch } : {}),
      ...(deps.now ? { now: deps.now } : {}),
      ...(deps.signal ? { signal: deps.signal } : {}),
      ...(metrics ? { onTunnelFailure: (reason: TunnelFailure) => metrics.egressProxyFailed(route, reason) } : {}),
    });
  } catch (err) {
    throw new UpstreamOpenError('egress', err as Error);
  }
  if (metrics) {
    metrics.clientCertificate(route, () => egress.certificate()?.notAfter);
    if (egress.egress.proxy) metrics.egressProxyInUse(route);
  }

  const built: Closable[] = [];
  let closed: Promise<void> | undefined;
  // The route's deadlines reach every engine on it: the proxy's, doctor's probes.
  const engineOptions = (transport: TransportOptions): EngineOptions => ({ ...transport, ...policy.deadlines, baseUrl, ca, egress: egress.egress });
  const adopt = <T extends Closable>(client: T): T => {
    built.push(client);
    return client;
  };
  return {
    route, policy, settings, baseUrl, ca, egress, engineOptions, adopt,
    engine: async (kind, transport) => adopt(await createProxyEngine(kind, engineOptions(transport))),
    close() {
      closed ??= (async () => {
        let first: unknown;
        for (const client of built.reverse()) {
          try {
            await client.close();
          } catch (err) {
            first ??= err;
          }
        }
        egress.close();
        if (first !== undefined) throw first;
      })();
      return closed;
    },
  };
}
