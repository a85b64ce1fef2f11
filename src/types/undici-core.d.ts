// Types for the undici files imported one by one in src/upstream/undici-core.ts (the package ships types
// only for its entry point).
declare module 'undici/lib/dispatcher/pool.js' {
  import { Pool } from 'undici';
  export default Pool;
}
declare module 'undici/lib/dispatcher/agent.js' {
  import { Agent } from 'undici';
  export default Agent;
}
declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  const request: (this: Dispatcher, options: Dispatcher.RequestOptions) => Promise<Dispatcher.ResponseData>;
  export default request;
}
declare module 'undici/lib/core/util.js' {
  const util: { parseHeaders(raw: Buffer[]): Record<string, string | string[]> };
  export default util;
}
declare module 'undici/lib/dispatcher/client.js' {
  import { Client } from 'undici';
  export default Client;
}
declare module 'undici/lib/core/symbols.js' {
  const symbols: { kKeepAliveDefaultTimeout: symbol; kKeepAliveMaxTimeout: symbol };
  export default symbols;
}
declare module 'undici/lib/core/connect.js' {
  const buildConnector: (options: Record<string, unknown>) => unknown;
  export default buildConnector;
}
