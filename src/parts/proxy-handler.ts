import type { ProxyRoute } from '../proxy/proxy-handler.js';
import { createProxyHandler } from '../proxy/proxy-handler.js';
import { compileIpGuard } from '../shared/ip-guard.js';
import type { Part } from '../shared/part.js';
import { need, type Made, type PartDeps } from './made.js';

/** The request handler every proxy listener serves, over the routes the parts before it made. */
export function proxyHandlerPart(deps: PartDeps, made: Made): Part {
  const { config, metrics, logger, clock, replayBudget, uploadShare, secrets } = deps;
  return {
    name: 'proxy handler',
    start() {
      const routes: ProxyRoute[] = [need(made.service, 'the service part').route];
      if (made.localization) routes.push(made.localization.route);
      made.handler = createProxyHandler({
        routes, guard: compileIpGuard(config.guard.allow, config.guard.trustedProxies), metrics, logger, clock,
        replayBodyLimitBytes: config.proxy.replayBodyLimitBytes, replayBudget, logRequests: config.log.requests,
        minUploadBytesPerSecond: config.proxy.minUploadBytesPerSecond,
        uploadShare,
        diagnosticRedact: (text) => secrets.redactFragments(text),
      });
      // The listeners' connection series start at 0 here, in the order /metrics has always listed
      // them (proxy, admin, socket), whichever listener binds first.
      metrics.listenerStarted('proxy');
      metrics.listenerStarted('admin');
      if (config.listen.socket) metrics.listenerStarted('socket');
    },
  };
}
