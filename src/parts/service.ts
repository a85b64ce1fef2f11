import { startServicePart } from '../service/service-part.js';
import type { Part } from '../shared/part.js';
import type { Made, PartDeps } from './made.js';

/**
 * The service part: credentials, the upstream, the token manager and the service route. Its pieces
 * register their own stops in the run group as they are made.
 */
export function servicePart(deps: PartDeps, made: Made): Part {
  const { config, group, metrics, clock, logger, secrets } = deps;
  return {
    name: 'service',
    async start() {
      made.service = await startServicePart(config, {
        group, metrics, clock, logger, secrets,
        ...(deps.random ? { random: deps.random } : {}), ...(deps.configPath ? { configPath: deps.configPath } : {}), ...(deps.env ? { env: deps.env } : {}),
      });
    },
  };
}
