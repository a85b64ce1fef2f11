/**
 * The one place the two forms of `credentials` are told apart (docs/credential-sets.md): the
 * object form is one set with the id `default` and no selector; the list form is each entry. Every
 * other module reads sets through {@link credentialSets}.
 */
import type { Config } from './schema.js';
import type { ConfigPath } from './walk.js';

/** The id the object form of `credentials` stands for. */
export const DEFAULT_CREDENTIAL_ID = 'default';


/** A set's own listener: TCP (host, port) or a unix socket. */
export type SetListen =
  | { kind: 'tcp'; host: string; port: number }
  | { kind: 'socket'; socket: string; socketMode: string; socketGroup?: string };

/** One credential set, normalised. */
export interface CredentialSet {
  id: string;
  apiKey?: string;
  apiKeyFile?: string;
  password?: string;
  passwordFile?: string;
  rkObjectId?: string;
  /** Its installation of the service; service.baseUrl when absent. */
  baseUrl: string;
  listen?: SetListen;
  /** Normalised without its trailing slash (`/objects-12`), as a route prefix is. */
  pathPrefix?: string;
  headerAllow?: readonly string[];
  /** Where it stands in the config (`credentials` or `credentials[1]`), as problems name keys. */
  path: ConfigPath;
  /** True in the object form: the environment variables and today's messages apply. */
  single: boolean;
}

/** True when the config lists its sets (the list form of `credentials`). */
export function listsCredentialSets(config: Pick<Config, 'credentials'>): boolean {
  return Array.isArray(config.credentials);
}

/** Every credential set of a validated config, in config order. */
export function credentialSets(config: Pick<Config, 'credentials' | 'service'>): CredentialSet[] {
  const c = config.credentials;
  if (!Array.isArray(c)) {
    return [{ ...withoutUndefined(c), id: DEFAULT_CREDENTIAL_ID, baseUrl: config.service.baseUrl, path: ['credentials'], single: true }];
  }
  return c.map((entry, i) => {
    const { listen, pathPrefix, baseUrl, headerAllow, ...keys } = entry;
    return {
      ...withoutUndefined(keys),
      baseUrl: baseUrl ?? config.service.baseUrl,
      ...(listen ? { listen: setListen(listen) } : {}),
      ...(pathPrefix !== undefined ? { pathPrefix: pathPrefix.replace(/\/+$/, '') } : {}),
      ...(headerAllow ? { headerAllow } : {}),
      path: ['credentials', i],
      single: false,
    };
  });
}

/**
 * The set a request on the shared listener uses when it chooses none: the one without a selector
 * (no listen, pathPrefix or headerAllow); undefined when there is none (check-config refuses two).
 */
export function defaultSet(sets: readonly CredentialSet[]): CredentialSet | undefined {
  return sets.find((s) => !s.listen && s.pathPrefix === undefined && s.headerAllow === undefined);
}

/** `<file>` for the object form (today's name), `<file>.<id>` for each set of a list. */
export function tokenFileFor(file: string, set: Pick<CredentialSet, 'id' | 'single'>): string {
  return set.single ? file : `${file}.${set.id}`;
}

/** A problem's key inside a set: `credentials.apiKey`, `credentials[1].apiKey`. */
export function setKeyPath(set: Pick<CredentialSet, 'path'>, key: string): ConfigPath {
  return [...set.path, key];
}

function setListen(l: NonNullable<Extract<Config['credentials'], unknown[]>[number]['listen']>): SetListen {
  if (l.socket !== undefined) return { kind: 'socket', socket: l.socket, socketMode: l.socketMode ?? '0660', ...(l.socketGroup ? { socketGroup: l.socketGroup } : {}) };
  return { kind: 'tcp', host: l.host ?? '127.0.0.1', port: l.port ?? 0 };
}

function withoutUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** The credential store's `at` for a set of a list (`credentials[1]`); nothing for the object form. */
export function storeLabel(set: Pick<CredentialSet, 'path' | 'single'>): { at?: string } {
  return set.single ? {} : { at: `credentials[${String(set.path[1])}]` };
}
