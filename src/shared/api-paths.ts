/**
 * Where the B2B API puts its operations under `service.baseUrl` (the API description's paths):
 * written once here, read by the token client, the config checks, doctor and the messages.
 */

/** The prefix of every operation; `service.baseUrl` is the root above it. */
export const API_PREFIX = '/pub/b2b/v1';

/** The token operation. */
export const GENTOKEN_PATH = `${API_PREFIX}/auth/gentoken`;

/** `{baseUrl}{path}`, whether or not baseUrl has a path or a trailing slash. */
export function apiUrl(baseUrl: string, path: string): string {
  const url = new URL(baseUrl);
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}${path}`;
}
