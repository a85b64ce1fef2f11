import { ListenError } from '../config/listen-error.js';
import type { AnyListener, Metrics } from '../observability/metrics.js';
import type { Listener } from '../proxy/listener/listener.js';

/** Binds a listener; a failure names the listener and its config key. */
export function listenOn(listener: Listener, which: 'proxy' | 'admin', at: { host: string; port: number }): Promise<number> {
  return listener.listen(at.host, at.port).catch((err: unknown) => {
    throw new ListenError(which, at.host, at.port, err);
  });
}

/** A listener's connections, counted (its series were started by the proxy handler part). */
export function counted(metrics: Metrics, listener: AnyListener) {
  return { onOpen: () => metrics.connectionOpened(listener), onClose: () => metrics.connectionClosed(listener) };
}
