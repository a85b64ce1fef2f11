// Types for @podium/node-http-proxy (http-proxy 1.18.1 without its deprecated `util._extend` calls): its
// entry point has http-proxy's API, typed by @types/http-proxy; and the internals that
// src/upstream/http-proxy-engine.ts adjusts (the types cover only the entry point).
declare module '@podium/node-http-proxy' {
  import httpProxy = require('http-proxy');
  export = httpProxy;
}
declare module '@podium/node-http-proxy/lib/http-proxy/common.js' {
  const common: { urlJoin(...parts: string[]): string };
  export default common;
}
declare module '@podium/node-http-proxy/lib/http-proxy/passes/web-incoming.js' {
  const passes: { deleteLength: unknown; stream: unknown };
  export default passes;
}
