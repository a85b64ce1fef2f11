// Types for the http-proxy internals src/upstream/http-proxy-engine.ts adjusts (the package's types cover
// only its entry point).
declare module 'http-proxy/lib/http-proxy/common.js' {
  const common: { urlJoin(...parts: string[]): string };
  export default common;
}
declare module 'http-proxy/lib/http-proxy/passes/web-incoming.js' {
  const passes: { deleteLength: unknown; stream: unknown };
  export default passes;
}
