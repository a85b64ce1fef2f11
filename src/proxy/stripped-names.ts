import type { CompiledAttachments } from './attach.js';

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
    stripHeaders: new Set([...serviceAttachments.headerNames, ...ownHeaders.map((h) => h.toLowerCase())]),
    stripQuery: serviceAttachments.queryNames,
    stripCookies: serviceAttachments.cookieNames,
  };
}
