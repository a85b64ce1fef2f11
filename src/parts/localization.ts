import type { LocalizationPart } from '../localization/localization-part.js';
import { transportOptions } from '../service/service-part.js';
import type { Part } from '../shared/part.js';
import { need, type Made, type PartDeps } from './made.js';

export type LoadLocalizationPart = () => Promise<typeof import('../localization/localization-part.js')>;

/**
 * The localization parts, none when `localization` is not configured: its module is loaded first
 * (the schema and the poller cost start-up time, so it is read only when configured), then the
 * part is made. They are two steps so that a stop during the import (the first start of a process
 * reads the module from disk) gives up before the part is made.
 */
export function localizationParts(deps: PartDeps, made: Made, load: LoadLocalizationPart | undefined): Part[] {
  const { config, clock, logger, secrets, metrics, registry, group } = deps;
  const l10n = config.localization;
  if (!l10n) return [];
  let module: Awaited<ReturnType<LoadLocalizationPart>> | undefined;
  let part: LocalizationPart | undefined;
  return [{
    name: 'localization module',
    async start() {
      module = await (load ?? (() => import('../localization/localization-part.js')))();
    },
  }, {
    name: 'localization',
    async start() {
      part = await need(module, 'the localization module').startLocalizationPart(l10n, {
        engine: config.proxy.engine, engineOptions: transportOptions(config, { clock, logger }), serviceAttachments: need(made.service, 'the service part').attachments,
        registry, clock, logger, secrets, metrics, signal: group.signal, ...(deps.env ? { env: deps.env } : {}),
      });
      made.localization = part;
    },
    stop: () => part?.stop(),
  }];
}
