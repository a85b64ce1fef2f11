import type { LocalizationConfig } from '../config/schema.js';
import { loadTrustedCas, type TrustedCas } from '../shared/tls.js';
import { createTokenSource, type TokenSourceOptions } from './weblate-token.js';

/** What the proxy needs to serve `{pathPrefix}/<rest>` → `{targetBaseUrl}/<rest>` (GET/HEAD). */
export interface LocalizationRoute {
  /** e.g. `/l10n`; requests under it go to the localization server. */
  pathPrefix: string;
  /** The localization server root, without a trailing slash. */
  targetBaseUrl: string;
  /** Trusted CAs for the localization server (system roots + caFile), or undefined for Node's defaults. */
  ca: TrustedCas | undefined;
  /** `Token <token>` for the outgoing request, or undefined for a public server. */
  authorizationHeader: () => string | undefined;
  /** Re-reads the token file now (SIGHUP). */
  reloadToken(): void;
  /** Stops watching the token file; idempotent. */
  close(): void;
}

/**
 * Describes the proxied localization route from `config.localization`. It carries only the
 * localization token: the B2B token, ApiKey and rkObjectId belong to the service route alone.
 * Throws when caFile or tokenFile cannot be read, so the sidecar fails before it starts.
 */
export function localizationRoute(
  cfg: LocalizationConfig,
  deps: Pick<TokenSourceOptions, 'secrets' | 'onError'> & { watch?: boolean },
): LocalizationRoute {
  const ca = loadTrustedCas(cfg.caFile); // first: a bad caFile must not leave a file watcher behind
  const token = createTokenSource(cfg, deps);
  return {
    pathPrefix: cfg.pathPrefix,
    targetBaseUrl: cfg.baseUrl.replace(/\/+$/, ''),
    ca,
    authorizationHeader: () => {
      const value = token();
      return value === undefined ? undefined : `Token ${value}`;
    },
    reloadToken: () => token.reload(),
    close: () => token.close(),
  };
}
