import ClientClass from 'undici/lib/dispatcher/client.js';
import symbols from 'undici/lib/core/symbols.js';
import type { Clock } from '../shared/clock.js';

/**
 * What the engine knows of one pooled undici Client. With `pipelining: 1` a Client holds one
 * connection at a time, so this describes that connection: how many responses it has carried
 * since it connected, and since when it has been idle.
 */
export interface PooledConnection {
  responses: number;
  /** Clock ms when the last response on this connection completed. */
  idleSince: number;
}

/** A dispatch handler learns its connection when the pool hands it to a Client. */
export interface ConnectionAware {
  connection: PooledConnection | undefined;
}

type Client = InstanceType<typeof ClientClass>;
type ClientOptions = ConstructorParameters<typeof ClientClass>[1];

/**
 * The Pool's `factory`: Clients whose dispatch tells each handler its connection, so an exchange
 * that fails can tell a reused connection from a fresh one and how long it had been idle
 * (undici reports neither). `setIdleTimeout` changes the keep-alive idle timeout of every Client,
 * through the fields undici reads whenever a connection goes idle.
 */
export function trackedClients(clock: Clock) {
  const clients = new Set<Client>();
  let idleTimeoutMs: number | undefined;
  return {
    factory(origin: URL | string, options: ClientOptions): Client {
      const client = new ClientClass(origin, idleTimeoutMs === undefined ? options : { ...options, keepAliveTimeout: idleTimeoutMs, keepAliveMaxTimeout: idleTimeoutMs });
      const connection: PooledConnection = { responses: 0, idleSince: clock.now() };
      client.on('connect', () => {
        connection.responses = 0;
        connection.idleSince = clock.now();
      });
      const dispatch = client.dispatch.bind(client);
      client.dispatch = (opts, handler) => {
        (handler as Partial<ConnectionAware>).connection = connection;
        return dispatch(opts, handler);
      };
      clients.add(client);
      // The pool drops a Client whose connection attempt failed (and makes a new one later).
      client.once('connectionError', () => clients.delete(client));
      return client;
    },
    setIdleTimeout(ms: number): void {
      idleTimeoutMs = ms;
      for (const client of clients) {
        const fields = client as unknown as Record<symbol, number>;
        fields[symbols.kKeepAliveDefaultTimeout] = ms;
        fields[symbols.kKeepAliveMaxTimeout] = ms;
      }
    },
  };
}
