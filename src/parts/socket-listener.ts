import { ListenError } from '../config/listen-error.js';
import { createListener, type Listener } from '../proxy/listener/listener.js';
import { groupId } from '../proxy/listener/local-socket.js';
import type { Part } from '../shared/part.js';
import { counted } from './listen-on.js';
import { need, type Made, type PartDeps } from './made.js';

/**
 * The same handler on a unix socket (`listen.socket`), none when not configured; its file mode and
 * group are the guard (proxy/listener/local-socket.ts). Two steps: the listener is registered before it
 * binds, so a failure after it bound (its mode or group refused, the path taken meanwhile) still
 * closes it, or the open listener keeps a process that could not start alive. close() removes the
 * socket file only if this listener put it there, never a live one it refused to take.
 */
export function socketParts(deps: PartDeps, made: Made): Part[] {
  const { config, metrics, logger, clock } = deps;
  const path = config.listen.socket;
  if (!path) return [];
  let listener: Listener | undefined;
  return [{
    name: 'socket listener',
    start() {
      listener = createListener(need(made.handler, 'the proxy handler'), config.proxy, logger, {
        local: true, ...counted(metrics, 'socket'),
        onRefused: (reason) => metrics.connectionRefused('socket', reason),
        full: { listener: 'socket', remedy: 'raise proxy.maxConnections if the clients are expected (the socket has its own count)', now: () => clock.now() },
      });
      made.socket = listener;
    },
    stop: () => listener?.close(0),
  }, {
    name: 'socket bind',
    async start() {
      const socketGroup = config.listen.socketGroup;
      await Promise.resolve()
        .then(() => need(listener, 'the socket listener').listenPath(path, parseInt(config.listen.socketMode, 8), socketGroup ? groupId(socketGroup) : undefined))
        .catch((err: unknown) => { throw new ListenError('proxy', path, undefined, err); });
      made.listeners.socket = path;
    },
  }];
}
