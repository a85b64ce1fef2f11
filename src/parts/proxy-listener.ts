import { createListener, type Listener } from '../proxy/listener/listener.js';
import type { Part } from '../shared/part.js';
import { counted, listenOn } from './listen-on.js';
import { need, type Made, type PartDeps } from './made.js';

/** The proxy's TCP listener (`listen`), bound after the admin listener. */
export function proxyListenerPart(deps: PartDeps, made: Made): Part {
  const { config, metrics, logger, clock } = deps;
  let bound: Listener | undefined;
  return {
    name: 'proxy listener',
    async start() {
      const listener = createListener(need(made.handler, 'the proxy handler'), config.proxy, logger, {
        onRefused: (reason) => metrics.connectionRefused('proxy', reason), ...counted(metrics, 'proxy'),
        full: { listener: 'proxy', remedy: 'raise proxy.maxConnections if the clients are expected', now: () => clock.now() },
      });
      made.proxy = listener;
      const port = await listenOn(listener, 'proxy', config.listen);
      bound = listener;
      made.ports.proxy = port;
      made.listeners.proxy = `${config.listen.host}:${port}`;
    },
    stop: () => bound?.close(0),
  };
}
