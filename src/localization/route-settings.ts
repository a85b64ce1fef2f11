import type { LocalizationConfig } from '../config/schema.js';
import { createTokenSource, type TokenSourceOptions } from './weblate-token.js';

/** What the proxy needs to serve `{pathPrefix}/<rest>` → `{targetBaseUrl}/<rest>` (GET/HEAD). */
export interface LocalizationRoute {
  /** e.g. `/l10n`; requests under it go to the localization server. */
  pathPrefix: string;
  /** The localization server root, without a trailing slash. */
  targetBaseUrl: string;
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
 * Throws when tokenFile cannot be read, so the sidecar fails before it starts (the CA and the way
 * out are the upstream's: upstream/open-upstream.ts).
 */
export function localizationRoute(
  cfg: LocalizationConfig,
  deps: Pick<TokenSourceOptions, 'secrets' | 'onError'> & { watch?: boolean },
): LocalizationRoute {
  const token = createTokenSource(cfg, deps);
  return {
    pathPrefix: cfg.pathPrefix,
    targetBaseUrl: cfg.baseUrl.replace(/\/+$/, ''),
    authorizationHeader: () => {
      const value = token();
      return value === undefined ? undefined : `Token ${value}`;
    },
    reloadToken: () => token.reload(),
    close: () => token.close(),
  };
}
