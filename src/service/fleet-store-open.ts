import { hostname } from 'node:os';
import { join } from 'node:path';
import type { Config } from '../config/schema.js';
import type { FleetStore } from '../fleet/fleet-store.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { FleetOptions } from '../token/fleet-source.js';

/**
 * `fleet.store` made a FleetStore: the engine named by the config, imported only then (no Redis
 * client or SQLite module is loaded by a sidecar that does not use it). Opening never waits for
 * the store's server: an engine connects on first use, so a store down at start does not stop
 * the start (docs/fleet.md, "When the store is down").
 */
export async function openFleetStore(config: Config, deps: { logger: Logger; env?: Readonly<Record<string, string | undefined>> }): Promise<FleetStore | undefined> {
  const fleet = config.fleet;
  switch (fleet.store) {
    case 'none':
      return undefined;
    case 'sqlite': {
      const { openSqliteStore } = await import('../fleet/sqlite-store.js');
      return openSqliteStore({ path: fleet.sqlitePath! });
    }
    case 'redis': {
      // The client is its own bundle (dist/lib/bundle/ioredis.cjs), loaded only here (docs/fleet.md, "The client: ioredis").
      const { openRedisStore } = await import('../fleet/redis-store.js');
      return openRedisStore({
        url: fleet.redisUrl!, logger: deps.logger,
        ...(fleet.redisPasswordFile ? { passwordFile: fleet.redisPasswordFile } : {}),
        ...(fleet.redisCaFile ? { caFile: fleet.redisCaFile } : {}),
      });
    }
    case 'kubernetes': {
      const { openKubernetesStore } = await import('../fleet/kubernetes-store.js');
      const env = deps.env ?? {};
      const dir = fleet.kubernetesServiceAccountDir;
      return openKubernetesStore({
        secretName: fleet.kubernetesSecret!, logger: deps.logger,
        ...(fleet.kubernetesNamespace ? { namespace: fleet.kubernetesNamespace } : {}),
        env: { KUBERNETES_SERVICE_HOST: env.KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT: env.KUBERNETES_SERVICE_PORT },
        tokenFile: join(dir, 'token'), caFile: join(dir, 'ca.crt'), namespaceFile: join(dir, 'namespace'),
      });
    }
  }
}

/** Who this process is in the store: the host name (a pod's name in Kubernetes) and the process id. */
export function fleetHolder(): string {
  return `${hostname()}/${process.pid}`;
}

/** Every `fleet.*` setting the token manager's fleet source reads, and its metric hooks. */
export function fleetOptions(config: Config, store: FleetStore, metrics?: Pick<Metrics, 'fleetClaim' | 'fleetPublishConflict' | 'fleetStoreError'>, credentialId = 'default', baseUrl = config.service.baseUrl): FleetOptions {
  const fleet = config.fleet;
  return {
    store,
    // The record's key: this set's installation and ApiKey (fleet-record.ts).
    baseUrl,
    holder: fleetHolder(),
    onStoreDown: fleet.onStoreDown,
    pollIntervalMs: fleet.pollIntervalSeconds * 1000,
    // Longer than the gentoken deadline by construction: a claim never lapses during the call.
    claimMs: config.service.tokenTimeoutMs + fleet.claimMarginSeconds * 1000,
    claimMarginMs: fleet.claimMarginSeconds * 1000,
    clockSkewMs: fleet.clockSkewSeconds * 1000,
    credentialId,
    ...(metrics ? {
      onClaim: (result) => metrics.fleetClaim(credentialId, result),
      onPublishConflict: () => metrics.fleetPublishConflict(credentialId),
      onStoreError: (operation) => metrics.fleetStoreError(credentialId, operation),
    } : {}),
  };
}
