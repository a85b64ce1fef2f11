import type { Config } from '../config/schema.js';
import type { LocalizationPart } from '../localization/localization-part.js';
import { tokenClientOptions, type ServicePart } from '../service/service-part.js';
import { gentokenUrl } from '../token/token-client.js';
import { need, type Made } from './made.js';

/** The fields of the `sidecar started` line: where it listens and what it talks to, never a secret. */
export function startLogFields(config: Config, made: Made, build: { version: string; node: string }): Record<string, unknown> {
  const part = need(made.service, 'the service part');
  const { localization } = made;
  const l10n = config.localization;
  const socketPath = config.listen.socket;
  return {
    version: build.version, node: build.node,
    listen: `${config.listen.host}:${made.ports.proxy}`, admin: `${config.admin.host}:${made.ports.admin}`,
    ...(socketPath ? { socket: socketPath, socketMode: config.listen.socketMode, socketGuard: 'file permissions (guard.allow does not apply)' } : {}),
    service: new URL(config.service.baseUrl).origin, gentoken: gentokenUrl(tokenClientOptions(config, undefined)), engine: config.proxy.engine,
    localization: l10n ? new URL(l10n.baseUrl).origin : undefined,
    // Which forward proxy carries which upstream's connections, or why none does.
    egress: { service: part.egress.path, ...(localization ? { localization: localization.egress.path } : {}) },
    ...clientCertificates(part, localization),
    // Several credential sets: how many, and the sets' own listeners (docs/credential-sets.md).
    ...(part.sets.length > 1 || !part.sets[0]!.set.single ? { credentialSets: part.sets.length, ...(made.listeners.sets ? { setListeners: made.listeners.sets } : {}) } : {}),
  };
}

/** The client certificates presented, for the start log (subject and expiry, never the key). */
function clientCertificates(service: ServicePart, localization: LocalizationPart | undefined): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const [route, handle] of [['service', service.egress], ['localization', localization?.egress]] as const) {
    const certificate = handle?.certificate();
    if (certificate) shown[`${route}ClientCertificate`] = { subject: certificate.subject, notAfter: certificate.notAfter.toISOString() };
  }
  return shown;
}
