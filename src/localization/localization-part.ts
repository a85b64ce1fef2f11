/**
 * localization/: the Weblate part: the /l10n route (settings, token file, Location rewrite), the
 * translation client and schema, the exporter. May import: shared/, config/, observability/,
 * upstream/, proxy/.
 */
import type { Registry } from '@prometheus-io/client';
import type { Logger } from '../observability/logger.js';
import { createTranslationMetrics } from '../observability/metrics.js';
import type { CompiledAttachments, PreparedAttachments } from '../proxy/attach.js';
import type { Clock } from '../shared/clock.js';
import type { LocalizationConfig } from '../config/schema.js';
import { staticCredentials } from '../proxy/route-credentials.js';
import { strippedNames } from '../proxy/stripped-names.js';
import type { EgressHandle } from '../upstream/egress-settings.js';
import { openUpstream, type TransportOptions } from '../upstream/open-upstream.js';
import type { Environment } from '../shared/egress-proxy.js';
import type { Metrics } from '../observability/metrics.js';
import { TokenUnavailableError } from '../shared/errors.js';
import type { ProxyRoute } from '../proxy/proxy-handler.js';
import type { SecretSet } from '../shared/secrets.js';
import { localizationClientOn } from './localization-client.js';
import { createLocationRewrite } from './location-rewrite.js';
import { localizationRoute, type LocalizationRoute } from './route-settings.js';
import { createTranslationExporter } from './translation-exporter.js';
import { parseTranslationRef } from '../config/translation-ref.js';

export interface LocalizationPart {
  route: ProxyRoute;
  /** Re-reads the token file, the proxy credentials and the client certificate (SIGHUP). */
  reload(): void;
  /** The way out to the localization server, for the start log. */
  egress: EgressHandle;
  /** Stops the poller, the pools and the file watcher; idempotent. */
  stop(): Promise<void>;
}

/**
 * The localization feature as one part of the sidecar: the `/l10n` proxy route with its own
 * token, and the poller that exports watched translations. Loaded only when configured.
 */
export async function startLocalizationPart(
  cfg: LocalizationConfig,
  deps: {
    engine: 'undici' | 'http-proxy';
    engineOptions: TransportOptions;
    /** The service route's attachments: their names are stripped so B2B credentials never leak here. */
    serviceAttachments: CompiledAttachments;
    registry: Registry;
    clock: Clock;
    logger: Logger;
    secrets: SecretSet;
    metrics?: Pick<Metrics, 'egressProxyFailed' | 'egressProxyInUse' | 'clientCertificate'>;
    /** Where HTTPS_PROXY and NO_PROXY are read; the process's environment by default. */
    env?: Environment;
    /** Aborted when the process stops during start-up. */
    signal?: AbortSignal;
  },
): Promise<LocalizationPart> {
  const { logger } = deps;
  const upstream = await openUpstream('localization', cfg, {
    env: deps.env ?? process.env, secrets: deps.secrets, logger, watch: true, metrics: deps.metrics, signal: deps.signal,
  });
  let described: LocalizationRoute | undefined;
  let engine;
  try {
    described = localizationRoute(cfg, {
      secrets: deps.secrets,
      onError: (err) => logger.error('localization token file unreadable; keeping the old token', { reason: err.message }),
    });
    engine = await upstream.engine(deps.engine, deps.engineOptions);
  } catch (err) {
    // Its file watchers must not outlive a part that never started.
    described?.close();
    await upstream.close();
    throw err;
  }
  const routeSettings = described;
  const client = cfg.watch.length > 0 ? localizationClientOn(upstream, () => routeSettings.authorizationHeader()?.slice('Token '.length)) : undefined;
  const exporter = client && createTranslationExporter({
    metrics: createTranslationMetrics(deps.registry), client, watch: cfg.watch.map((ref) => parseTranslationRef(ref)),
    pollIntervalSeconds: cfg.pollIntervalSeconds, clock: deps.clock, logger,
  });
  exporter?.start();

  let lastHeader: string | undefined;
  let prepared: PreparedAttachments = { headers: [], query: '', cookie: '' };
  const serviceNames = deps.serviceAttachments;
  let stopped: Promise<void> | undefined;
  return {
    route: {
      name: upstream.policy.name, prefix: upstream.policy.prefix, engine, methods: upstream.policy.methods,
      credentials: staticCredentials(() => {
        const header = routeSettings.authorizationHeader();
        if (header !== lastHeader) {
          lastHeader = header;
          prepared = { headers: header ? [['authorization', header]] : [], query: '', cookie: '' };
        }
        return prepared;
      }, () => new TokenUnavailableError('no localization token')),
      // Whatever the client sent, no B2B credential reaches the localization server: not the
      // attached names, and no cookie at all (a client's cookie jar holds the B2B service's session
      // cookies; the read-only lookup needs none).
      ...strippedNames(serviceNames, ['authorization', 'cookie']),
      // Weblate's trailing-slash redirects point at its own paths; keep clients on this route.
      rewriteLocation: createLocationRewrite(cfg.baseUrl, cfg.pathPrefix),
    },
    reload: () => {
      routeSettings.reloadToken();
      void upstream.egress.reload();
    },
    egress: upstream.egress,
    stop() {
      stopped ??= (async () => {
        await exporter?.stop();
        await upstream.close();
        routeSettings.close();
      })();
      return stopped;
    },
  };
}
