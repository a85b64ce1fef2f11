/**
 * The B2B service as one part of the sidecar, mirroring localization/localization-part.ts: the
 * credential store, the token client and manager, the engine to the service and the proxy route
 * that attaches the token. sidecar.ts only wires parts together.
 * May import: shared, config, observability, upstream, token, proxy.
 */
import type { Logger } from '../observability/logger.js';
import type { Config } from '../config/schema.js';
import type { Metrics } from '../observability/metrics.js';
import { compileAttachments, type CompiledAttachments } from '../proxy/attach.js';
import type { ProxyRoute } from '../proxy/proxy-handler.js';
import { tokenCredentials } from '../proxy/route-credentials.js';
import { strippedNames } from '../proxy/stripped-names.js';
import type { Clock } from '../shared/clock.js';
import type { RunGroup } from '../shared/run-group.js';
import type { SecretSet } from '../shared/secrets.js';
import { createCredentialStore, type CredentialStore } from '../token/credential-store.js';
import { createTokenClient, type TokenClient, type TokenClientOptions } from '../token/token-client.js';
import { TokenManager, type TokenManagerOptions } from '../token/token-manager.js';
import type { EgressHandle } from '../upstream/egress-settings.js';
import { openUpstream, type TransportOptions, type Upstream } from '../upstream/open-upstream.js';
import type { Environment } from '../shared/egress-proxy.js';
import { fleetOptions, openFleetStore } from './fleet-store-open.js';

export interface ServicePart {
  route: ProxyRoute;
  tokens: TokenManager;
  credentials: CredentialStore;
  /** The compiled `token.attach`, whose names every other route strips too. */
  attachments: CompiledAttachments;
  /** The way out to the service (proxy, client certificate), reloaded with the credentials. */
  egress: EgressHandle;
}

/** Headers the service route always owns besides its attachments: a client's own token. */
const SERVICE_ROUTE_HEADERS = ['authorization'];

/**
 * The one place the configuration becomes the options of each piece that talks to the service;
 * every command that builds one (`run`, `token`, `doctor`) calls these, so a new setting is read
 * here once and reaches all of them.
 */

/**
 * Settings every upstream connection pool shares (the service's and the localization server's
 * engine); each route's deadlines come from its policy (shared/routes.ts), which its upstream adds.
 */
export function transportOptions(config: Config, deps: { clock?: Clock; logger?: Logger } = {}): TransportOptions {
  return {
    maxSockets: config.proxy.maxSockets,
    keepAliveTimeoutMs: config.proxy.keepAliveTimeoutMs,
    bodyTimeoutMs: config.proxy.idleTimeoutMs,
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
  };
}

/** The gentoken client: every setting it reads, named; without `upstream`, its address alone (the start log). */
export function tokenClientOptions(config: Config, upstream?: Pick<Upstream, 'ca' | 'egress'>): TokenClientOptions {
  return { baseUrl: config.service.baseUrl, ca: upstream?.ca, timeoutMs: config.service.tokenTimeoutMs, egress: upstream?.egress.egress };
}

/** The gentoken client on the service's upstream, closed with it. */
export function tokenClientOn(config: Config, upstream: Upstream): TokenClient {
  return upstream.adopt(createTokenClient(tokenClientOptions(config, upstream)));
}

/**
 * Every setting the token manager reads, named: a new `token.*` key reaches it only through here.
 */
export function tokenManagerOptions(config: Config): TokenManagerOptions {
  return {
    renewAt: config.token.renewAt,
    maxLifetimeSeconds: config.token.maxLifetimeSeconds,
    ...(config.token.file !== undefined ? { file: config.token.file } : {}),
    tokenTimeoutMs: config.service.tokenTimeoutMs,
    maxGentokenPerMinute: config.token.maxGentokenPerMinute,
    maxRetryAfterSeconds: config.token.maxRetryAfterSeconds,
    startJitterSeconds: config.token.startJitterSeconds,
    // The sidecar strips a client's parameters of these names and appends its own (proxy/attach.ts).
    attachQueryNames: config.token.attach.filter((a) => a.in === 'query').map((a) => a.name.toLowerCase()),
  };
}

/**
 * Starts the service part inside `group` (each piece registered with its stop as it is made): the
 * credential store, the upstream (CA, egress; the token client and the engine are built on it and
 * closed with it), the token manager.
 * The token manager is made but not started: the sidecar starts it once the listeners are up.
 */
export async function startServicePart(config: Config, deps: {
  group: RunGroup;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
  secrets: SecretSet;
  random?: () => number;
  configPath?: string;
  /** Where HTTPS_PROXY and NO_PROXY are read; the process's environment by default. */
  env?: Environment;
}): Promise<ServicePart> {
  const { group, logger, secrets, clock } = deps;
  const credentials = await group.started(createCredentialStore(config.credentials, { logger, secrets }), (c) => c.close());
  const upstream = await group.started(openUpstream('service', config.service, {
    env: deps.env ?? process.env, secrets, logger, watch: true, metrics: deps.metrics, signal: group.signal,
  }), (u) => u.close());
  const client = tokenClientOn(config, upstream);
  // The fleet store (fleet.store), closed after the token manager has stopped (and released its claim).
  const store = await openFleetStore(config, { logger, env: deps.env ?? process.env });
  if (store) await group.started(Promise.resolve(store), (s) => s.close());
  const tokens = await group.started(new TokenManager({
    client, credentials, clock, logger, secrets, random: deps.random,
    onRefresh: (result, seconds) => deps.metrics.tokenRefreshed(result, seconds),
    onFailure: (cause) => deps.metrics.tokenRequestFailed(cause),
    onDeferred: (trigger) => deps.metrics.gentokenDeferred(trigger),
    onSuperseded: () => deps.metrics.tokenSuperseded(),
    ...(deps.configPath ? { configPath: deps.configPath } : {}),
    ...(store ? { fleet: fleetOptions(config, store, deps.metrics) } : {}),
    options: tokenManagerOptions(config),
  }), (m) => m.stop());
  // Closed with the upstream, after the token manager has stopped.
  const engine = await upstream.engine(config.proxy.engine, transportOptions(config, { clock, logger }));
  const attachments = compileAttachments(config.token.attach);
  return {
    route: {
      name: upstream.policy.name, prefix: upstream.policy.prefix, engine,
      credentials: tokenCredentials(tokens, attachments, secrets),
      ...strippedNames(attachments, SERVICE_ROUTE_HEADERS),
    },
    tokens,
    credentials,
    attachments,
    egress: upstream.egress,
  };
}
