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
import type { ProxyEngine } from '../upstream/engine.js';
import { createLocationRewrite } from '../shared/location-rewrite.js';
import { credentialSets, DEFAULT_CREDENTIAL_ID, storeLabel, tokenFileFor, type CredentialSet } from '../config/credential-sets.js';
import { openUpstream, type TransportOptions, type Upstream } from '../upstream/open-upstream.js';
import type { Environment } from '../shared/egress-proxy.js';
import { fleetOptions, openFleetStore } from './fleet-store-open.js';
import type { FleetStore } from '../fleet/fleet-store.js';
import { GentokenSlots } from '../token/pacing/gentoken-slots.js';

export interface ServicePart {
  /** The first set's route (prefix ''): the one route of a sidecar with one set. */
  route: ProxyRoute;
  /** The first set's token manager and credential store (the only ones of the object form). */
  tokens: TokenManager;
  credentials: CredentialStore;
  /** Every credential set, in config order (config/credential-sets.ts). */
  sets: SetPart[];
  /** The compiled `token.attach`, whose names every other route strips too. */
  attachments: CompiledAttachments;
  /** The way out to the service (proxy, client certificate), reloaded with the credentials. */
  egress: EgressHandle;
  /** Every upstream's way out (one per distinct baseUrl of the sets), reloaded on SIGHUP. */
  egresses: EgressHandle[];
}

/**
 * One credential set at run time: its own store, token manager and routes; the upstream (engine,
 * token client) is shared with every set of the same baseUrl, so a set costs no connection pool.
 */
export interface SetPart {
  id: string;
  set: CredentialSet;
  tokens: TokenManager;
  credentials: CredentialStore;
  /** The set's route without prefix: on its own listener, and when chosen by B2B-Credential or as the default. */
  route: ProxyRoute;
  /** Its route under `pathPrefix` on the shared listener (prefix stripped, Location rewritten back). */
  prefixRoute?: ProxyRoute;
}

/** Headers the service route always owns besides its attachments: a client's own token (B2B-Credential: stripped-names.ts). */
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
export function tokenClientOptions(config: Config, upstream?: Pick<Upstream, 'ca' | 'egress'>, baseUrl = config.service.baseUrl): TokenClientOptions {
  return { baseUrl, ca: upstream?.ca, timeoutMs: config.service.tokenTimeoutMs, egress: upstream?.egress.egress };
}

/** The gentoken client on the service's upstream (at `baseUrl`: a credential set's installation), closed with it. */
export function tokenClientOn(config: Config, upstream: Upstream, baseUrl = config.service.baseUrl): TokenClient {
  return upstream.adopt(createTokenClient(tokenClientOptions(config, upstream, baseUrl)));
}

/**
 * Every setting the token manager reads, named: a new `token.*` key reaches it only through here.
 */
export function tokenManagerOptions(config: Config, set: Pick<CredentialSet, 'id' | 'single'> = { id: DEFAULT_CREDENTIAL_ID, single: true }): TokenManagerOptions {
  return {
    renewAt: config.token.renewAt,
    maxLifetimeSeconds: config.token.maxLifetimeSeconds,
    // One file per set of a list, named by its id; the object form keeps the name as configured.
    ...(config.token.file !== undefined ? { file: tokenFileFor(config.token.file, set) } : {}),
    credentialId: set.id,
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
  const sets = credentialSets(config);
  const several = sets.length > 1 || !sets[0]!.single;
  // Each set's log lines say which set they are about; the object form's lines stay as they were.
  const logOf = (set: CredentialSet) => (several ? withCredential(logger, set.id) : logger);
  const stores: CredentialStore[] = [];
  for (const set of sets) {
    stores.push(await group.started(createCredentialStore(set, { logger: logOf(set), secrets, ...storeLabel(set) }), (c) => c.close()));
  }
  // One upstream (CA, egress, token client, engine) per installation: sets sharing a baseUrl share it.
  const upstreams = new Map<string, { upstream: Upstream; client: TokenClient }>();
  for (const set of sets) {
    if (upstreams.has(set.baseUrl)) continue;
    const settings = set.baseUrl === config.service.baseUrl ? config.service : { ...config.service, baseUrl: set.baseUrl };
    const upstream = await group.started(openUpstream('service', settings, {
      env: deps.env ?? process.env, secrets, logger, watch: true, metrics: deps.metrics, signal: group.signal,
    }), (u) => u.close());
    upstreams.set(set.baseUrl, { upstream, client: tokenClientOn(config, upstream, set.baseUrl) });
  }
  // The fleet store (fleet.store): one for every set, each set its own record; closed after the token managers have stopped (and released their claims).
  const store = await openFleetStore(config, { logger, env: deps.env ?? process.env });
  if (store) await group.started(Promise.resolve(store), (s) => s.close());
  // Several sets: their gentoken calls a few at a time (token.maxConcurrentGentoken) and their first renewals spread (docs/design.md).
  const shared = several ? { slots: new GentokenSlots(config.token.maxConcurrentGentoken), spreadFirstRenewal: true } : undefined;
  const managers: TokenManager[] = [];
  for (const [i, set] of sets.entries()) {
    const tokens = await group.started(setTokenManager(config, set, { ...deps, logger: logOf(set), ...(store ? { store } : {}), ...(shared ? { shared } : {}) }, upstreams.get(set.baseUrl)!.client, stores[i]!), (m) => m.stop());
    managers.push(tokens);
  }
  // Closed with their upstreams, after the token managers have stopped.
  const engines = new Map<string, ProxyEngine>();
  for (const [baseUrl, { upstream }] of upstreams) engines.set(baseUrl, await upstream.engine(config.proxy.engine, transportOptions(config, { clock, logger })));
  const attachments = compileAttachments(config.token.attach);
  const stripped = strippedNames(attachments, SERVICE_ROUTE_HEADERS);
  const policy = upstreams.values().next().value!.upstream.policy;
  const parts: SetPart[] = sets.map((set, i) => {
    const tokens = managers[i]!;
    const engine = engines.get(set.baseUrl)!;
    // One credential source per set: a route can only ever attach its own set's token.
    const credentials = tokenCredentials(tokens, attachments, secrets);
    const route: ProxyRoute = { name: policy.name, prefix: policy.prefix, engine, credentials, credential: set.id, ...stripped };
    return {
      id: set.id, set, tokens, credentials: stores[i]!, route,
      ...(set.pathPrefix !== undefined ? {
        prefixRoute: { ...route, prefix: set.pathPrefix, rewriteLocation: createLocationRewrite(set.baseUrl, set.pathPrefix) },
      } : {}),
    };
  });
  const first = parts[0]!;
  return {
    route: first.route, tokens: first.tokens, credentials: first.credentials, sets: parts, attachments,
    egress: upstreams.values().next().value!.upstream.egress,
    egresses: [...upstreams.values()].map((u) => u.upstream.egress),
  };
}

/**
 * A set's token manager: its own state, budget, backoff, per-path memory and token file. The one
 * place managers are made, so a limiter shared by all of them (bounding gentoken calls across
 * sets) is passed here.
 */
function setTokenManager(config: Config, set: CredentialSet, deps: {
  metrics: Metrics; clock: Clock; logger: Logger; secrets: SecretSet; random?: () => number; configPath?: string;
  store?: FleetStore; shared?: { slots: GentokenSlots; spreadFirstRenewal: boolean };
}, client: TokenClient, credentials: CredentialStore): TokenManager {
  const { metrics } = deps;
  metrics.credentialStarted(set.id);
  const options = tokenManagerOptions(config, set);
  return new TokenManager({
    client, credentials, clock: deps.clock, logger: deps.logger, secrets: deps.secrets, random: deps.random,
    onRefresh: (result, seconds) => metrics.tokenRefreshed(result, seconds, set.id),
    onFailure: (cause) => metrics.tokenRequestFailed(cause, set.id),
    onDeferred: (trigger) => metrics.gentokenDeferred(trigger, set.id),
    onSuperseded: () => metrics.tokenSuperseded(set.id),
    ...(deps.configPath ? { configPath: deps.configPath } : {}),
    ...(deps.store ? { fleet: fleetOptions(config, deps.store, metrics, set.id, set.baseUrl) } : {}),
    ...(deps.shared ? { slots: deps.shared.slots } : {}),
    options: deps.shared ? { ...options, spreadFirstRenewal: deps.shared.spreadFirstRenewal } : options,
  });
}

/** `logger` with `credential: <id>` on every line. */
function withCredential(logger: Logger, id: string): Logger {
  const field = { credential: id };
  const wrap = (method: Logger['info']): Logger['info'] => (message, ...args) => method(message, ...args, field);
  return { level: logger.level, error: wrap(logger.error), warn: wrap(logger.warn), info: wrap(logger.info), debug: wrap(logger.debug) };
}
