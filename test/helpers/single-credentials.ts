import type { Config, SingleCredentials } from '../../src/config/schema.js';

/** The object form of `credentials` (the only one these tests write); a list fails the test. */
export function singleCredentials(config: Pick<Config, 'credentials'>): SingleCredentials {
  if (Array.isArray(config.credentials)) throw new Error('expected the object form of credentials');
  return config.credentials;
}
