/**
 * undici's `request()` API on an Agent, for the localization client, without the package entry
 * point (see undici-core.ts for why). Separate from undici-core.ts so the proxy path does not
 * load the response-stream code.
 */
import type { Dispatcher } from 'undici';
import AgentClass from 'undici/lib/dispatcher/agent.js';
import requestOn from 'undici/lib/api/api-request.js';

export const Agent = AgentClass;
export type Agent = InstanceType<typeof AgentClass>;

/** `dispatcher.request(options)`: the prototype methods are only installed by the entry point. */
export function request(dispatcher: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
  return requestOn.call(dispatcher, options);
}
