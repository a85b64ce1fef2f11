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
import { createProxyEngine } from '../upstream/create-engine.js';
import { startEgress, type EgressHandle } from '../upstream/egress-settings.js';
import type { Environment } from '../shared/egress-proxy.js';
import type { Metrics } from '../observability/metrics.js';
import { TokenUnavailableError } from '../shared/errors.js';
import type { EngineOptions } from '../upstream/engine.js';
import type { ProxyRoute } from '../proxy/proxy-handler.js';
import type { SecretSet } from '../shared/secrets.js';
import { createLocalizationClient } from './localization-client.js';
import { createLocationRewrite } from './location-rewrite.js';
import { localizationRoute } from './route-settings.js';
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
    engineOptions: Omit<EngineOptions, 'baseUrl' | 'ca'>;
    /** The service route's attachments: their names are stripped so B2B credentials never leak here. */
    serviceAttachments: CompiledAttachments;
    registry: Registry;
    clock: Clock;
    logger: Logger;
    secrets: SecretSet;
    metrics?: Pick<Metrics, 'egressProxyFailed' | 'egressProxyInUse' | 'clientCertificate'>;
    /** Where HTTPS_PROXY and NO_PROXY are read; the process's environment by default. */
    env?: Environment;
  },
): Promise<LocalizationPart> {
  const { logger } = deps;
  const described = localizationRoute(cfg, {
    secrets: deps.secrets,
    onError: (err) => logger.error('localization token file unreadable; keeping the old token', { reason: err.message }),
  });
  let egress: EgressHandle | undefined;
  const engine = await startEgress(cfg, {
    route: 'localization', target: new URL(cfg.baseUrl), ca: described.ca, env: deps.env ?? process.env, secrets: deps.secrets, logger, watch: true,
    onTunnelFailure: (reason) => deps.metrics?.egressProxyFailed('localization', reason),
  }).then((started) => {
    egress = started;
    return createProxyEngine(deps.engine, { ...deps.engineOptions, baseUrl: new URL(cfg.baseUrl), ca: described.ca, egress: started.egress, headersTimeoutMs: cfg.timeoutMs });
  }).catch((err: unknown) => {
    // Its file watchers must not outlive a part that never started.
    egress?.close();
    described.close();
    throw err;
  });
  const way = egress!;
  deps.metrics?.clientCertificate('localization', () => way.certificate()?.notAfter);
  if (way.egress.proxy) deps.metrics?.egressProxyInUse('localization');
  const client = cfg.watch.length > 0
    ? createLocalizationClient({ baseUrl: cfg.baseUrl, ca: described.ca, egress: way.egress, token: () => described.authorizationHeader()?.slice('Token '.length), timeoutMs: cfg.timeoutMs, allowInsecureHttp: cfg.allowInsecureHttp })
    : undefined;
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
      name: 'localization', prefix: cfg.pathPrefix, engine, methods: new Set(['GET', 'HEAD']),
      credentials: staticCredentials(() => {
        const header = described.authorizationHeader();
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
      described.reloadToken();
      void way.reload();
    },
    egress: way,
    stop() {
      stopped ??= (async () => {
        await exporter?.stop();
        await client?.close();
        await engine.close();
        described.close();
        way.close();
      })();
      return stopped;
    },
  };
}
