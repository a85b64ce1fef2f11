import type { Server } from 'node:http';

/**
 * Every timeout of a Node HTTP(S) server, in milliseconds. Node's defaults have changed between
 * releases (Node 26 moved the keep-alive timeout's default) and are loose (60 s for headers, 5 min
 * for a request, no idle limit), so every server the product creates sets all four itself.
 */
export interface ServerTimeouts {
  /** Longest time a client may take to send the request headers (`headersTimeout`). */
  headersTimeoutMs: number;
  /** Longest time a client may take to send the whole request (`requestTimeout`). */
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open after a response (`keepAliveTimeout`). */
  keepAliveTimeoutMs: number;
  /** Socket inactivity limit (`timeout`); 0: none, the other limits and the handler's own bound the request. */
  idleTimeoutMs: number;
}

/** What each server was given by setServerTimeouts, so a test can tell an explicit value from a default. */
export const SERVER_TIMEOUTS = Symbol.for('b2b-sidecar.server-timeouts');

/** Sets all four timeouts of `server` (Node reads them per connection and request). */
export function setServerTimeouts<S extends Server>(server: S, timeouts: ServerTimeouts): S {
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.requestTimeout = timeouts.requestTimeoutMs;
  server.keepAliveTimeout = timeouts.keepAliveTimeoutMs;
  server.timeout = timeouts.idleTimeoutMs;
  (server as S & { [SERVER_TIMEOUTS]?: ServerTimeouts })[SERVER_TIMEOUTS] = { ...timeouts };
  return server;
}
