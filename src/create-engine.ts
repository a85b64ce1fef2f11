import { createHttpProxyEngine } from './http-proxy-engine.js';
import type { EngineOptions, ProxyEngine } from './proxy-engine.js';
import { createUndiciEngine } from './undici-engine.js';

/** The configured engine (`proxy.engine`). */
export function createProxyEngine(kind: 'undici' | 'http-proxy', options: EngineOptions): ProxyEngine {
  return kind === 'http-proxy' ? createHttpProxyEngine(options) : createUndiciEngine(options);
}
