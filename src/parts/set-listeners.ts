import { ListenError } from '../config/listen-error.js';
import { createListener, type Listener } from '../proxy/listener/listener.js';
import { groupId } from '../proxy/listener/local-socket.js';
import type { Part } from '../shared/part.js';
import { counted } from './listen-on.js';
import { need, type Made, type PartDeps } from './made.js';

/**
 * The listeners of the credential sets with their own `listen` (docs/credential-sets.md), bound
 * after the shared ones: TCP (host, port) or a unix socket (its file mode and group are its guard,
 * as for listen.socket). Their connections are counted with the proxy's (`listener` proxy or
 * socket): a label per set would grow the series with the sets. None without such sets.
 */
export function setListenersPart(deps: PartDeps, made: Made): Part {
  const { config, metrics, logger, clock } = deps;
  const open: Listener[] = [];
  return {
    name: 'credential set listeners',
    async start() {
      const service = need(made.service, 'the service part');
      for (const s of service.sets) {
        const at = s.set.listen;
        if (!at) continue;
        const handler = need(made.setHandlers?.get(s.id), `the handler of credential set ${s.id}`);
        const kind = at.kind === 'socket' ? 'socket' : 'proxy';
        const listener = createListener(handler, config.proxy, logger, {
          ...(at.kind === 'socket' ? { local: true } : {}),
          onRefused: (reason) => metrics.connectionRefused(kind, reason), ...counted(metrics, kind),
          full: { listener: `credential set ${s.id}`, remedy: 'raise proxy.maxConnections if the clients are expected (each listener has its own count)', now: () => clock.now() },
        });
        // Registered before it binds: a failure after the bind still closes it.
        open.push(listener);
        (made.setListeners ??= []).push(listener);
        let address: string;
        if (at.kind === 'socket') {
          await listener.listenPath(at.socket, parseInt(at.socketMode, 8), at.socketGroup ? groupId(at.socketGroup) : undefined)
            .catch((err: unknown) => { throw new ListenError('proxy', at.socket, undefined, err, { id: s.id, path: s.set.path }); });
          address = at.socket;
        } else {
          const port = await listener.listen(at.host, at.port).catch((err: unknown) => { throw new ListenError('proxy', at.host, at.port, err, { id: s.id, path: s.set.path }); });
          address = `${at.host}:${port}`;
        }
        (made.listeners.sets ??= {})[s.id] = address;
      }
    },
    stop: async () => {
      await Promise.all(open.map((l) => l.close(0)));
    },
  };
}
