/**
 * The credential sets of a config, as the commands read them: the single form of `credentials` is
 * one set with the id `default`; each set has an id, its keys and, when it belongs to another
 * installation of the service, its own `baseUrl`.
 */
import type { Config } from './schema.js';

/** The id the single form of `credentials` stands for. */
export const DEFAULT_CREDENTIAL_ID = 'default';

/** One credential set: its id and its keys. */
export interface CredentialSet {
  id: string;
  apiKey?: string;
  apiKeyFile?: string;
  password?: string;
  passwordFile?: string;
  rkObjectId?: string;
  /** Its installation of the service; service.baseUrl when absent. */
  baseUrl?: string;
}

/**
 * Every credential set of a validated config, in config order: the single form as the set
 * `default`; a list of sets (each with its `id`) as it stands.
 */
export function credentialSets(config: Pick<Config, 'credentials'>): CredentialSet[] {
  const listed: unknown = config.credentials;
  if (Array.isArray(listed)) return (listed as CredentialSet[]).map((set) => ({ ...set }));
  return [{ id: DEFAULT_CREDENTIAL_ID, ...config.credentials }];
}
