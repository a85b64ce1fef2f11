import type { CompiledAttachments } from './attach.js';

/** The request header that chooses a credential set (lower case, as Node gives header names). */
export const CREDENTIAL_HEADER = 'b2b-credential';

/** What a route removes from a client request before it attaches its own credentials. */
export interface StrippedNames {
  /** Lower-case header names. */
  stripHeaders: ReadonlySet<string>;
  stripQuery: ReadonlySet<string>;
  stripCookies: ReadonlySet<string>;
}

/**
 * The names every route strips: those of the service's attachments (so a client can neither
 * forge them on the service route nor have a B2B credential reach another route) plus the
 * route's own credential headers.
 */
export function strippedNames(serviceAttachments: CompiledAttachments, ownHeaders: readonly string[]): StrippedNames {
  return {
    // B2B-Credential chooses a credential set and never leaves the sidecar, on any route (docs/credential-sets.md).
    stripHeaders: new Set([...serviceAttachments.headerNames, ...ownHeaders.map((h) => h.toLowerCase()), CREDENTIAL_HEADER]),
    stripQuery: serviceAttachments.queryNames,
    stripCookies: serviceAttachments.cookieNames,
  };
}
