import { defaultSet } from '../config/credential-sets.js';
import type { ProxyRoute } from '../proxy/proxy-handler.js';
import { createProxyHandler } from '../proxy/proxy-handler.js';
import type { ChoosableSet, CredentialChoice } from '../proxy/credential-choice.js';
import type { SetPart } from '../service/service-part.js';
import { TokenUnavailableError } from '../shared/errors.js';
import { compileIpGuard } from '../shared/ip-guard.js';
import type { Part } from '../shared/part.js';
import { need, type Made, type PartDeps } from './made.js';

/**
 * The request handler every proxy listener serves, over the routes the parts before it made: the
 * shared listener's (listen, listen.socket) and one per credential set with its own `listen`
 * (docs/credential-sets.md).
 */
export function proxyHandlerPart(deps: PartDeps, made: Made): Part {
  const { config, metrics, logger, clock, replayBudget, uploadShare, secrets } = deps;
  return {
    name: 'proxy handler',
    start() {
      const service = need(made.service, 'the service part');
      const guard = compileIpGuard(config.guard.allow, config.guard.trustedProxies);
      const handlerFor = (routes: ProxyRoute[], credentialChoice: CredentialChoice) => createProxyHandler({
        routes, guard, metrics, logger, clock,
        replayBodyLimitBytes: config.proxy.replayBodyLimitBytes, replayBudget, logRequests: config.log.requests,
        minUploadBytesPerSecond: config.proxy.minUploadBytesPerSecond,
        uploadShare,
        diagnosticRedact: (text) => secrets.redactFragments(text),
        credentialChoice,
      });
      const choosable = new Map<string, ChoosableSet>(service.sets.map((s) => [s.id, {
        route: s.route, ...(s.set.headerAllow ? { headerAllow: compileIpGuard(s.set.headerAllow, config.guard.trustedProxies) } : {}),
      }]));
      const unchosen = sharedDefault(service.sets);
      const shared: ProxyRoute[] = [...service.sets.flatMap((s) => (s.prefixRoute ? [s.prefixRoute] : [])), unchosen];
      if (made.localization) shared.push(made.localization.route);
      made.handler = handlerFor(shared, { sets: choosable, unchosen });
      // A set's own listener: every request there uses that set (the header may only name it).
      for (const s of service.sets) {
        if (!s.set.listen) continue;
        const routes: ProxyRoute[] = [s.route];
        if (made.localization) routes.push(made.localization.route);
        (made.setHandlers ??= new Map()).set(s.id, handlerFor(routes, { sets: choosable }));
      }
      // The listeners' connection series start at 0 here, in the order /metrics has always listed
      // them (proxy, admin, socket), whichever listener binds first.
      metrics.listenerStarted('proxy');
      metrics.listenerStarted('admin');
      if (config.listen.socket) metrics.listenerStarted('socket');
    },
  };
}

/**
 * The shared listener's route for a request that chooses no set: the default set's (the one
 * without a selector), else a placeholder the handler answers 400 for and that could attach no
 * token if it were ever forwarded.
 */
function sharedDefault(sets: readonly SetPart[]): ProxyRoute {
  const found = defaultSet(sets.map((s) => s.set));
  if (found) return sets.find((s) => s.set === found)!.route;
  const { credential: _none, ...rest } = sets[0]!.route;
  const none = () => new TokenUnavailableError('no credential set chosen');
  return { ...rest, credentials: { current: () => undefined, acquire: () => Promise.reject(none()) } };
}
