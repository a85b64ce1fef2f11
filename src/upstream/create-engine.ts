import type { EngineOptions, ProxyEngine } from './engine.js';
import { createUndiciEngine } from './undici-engine.js';

/**
 * The configured engine (`proxy.engine`). http-proxy is loaded only when chosen, so the default
 * engine does not pay for its module at start-up.
 */
export async function createProxyEngine(kind: 'undici' | 'http-proxy', options: EngineOptions): Promise<ProxyEngine> {
  if (kind === 'http-proxy') return (await import('./http-proxy-engine.js')).createHttpProxyEngine(options);
  return createUndiciEngine(options);
}
