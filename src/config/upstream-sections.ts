/**
 * The two upstream sections of the schema, `service` and `localization`: every key declared in
 * shared/upstream-keys.ts, then the section's own keys. A function of the declaration, so a test
 * can build the schema from a declaration with one more key (schema.ts holds the real one).
 */
import { Type } from '@sinclair/typebox';
import { MAX_TIMER_MS } from '../shared/clock.js';
import { envNameOf } from '../shared/env-names.js';
import { routeDeclaration } from '../shared/routes.js';
import { UPSTREAM_KEYS, upstreamProperties, type UpstreamKeys } from '../shared/upstream-keys.js';

const reread = { 'x-reload': 'file re-read' } as const;
/** A path deadline is bounded as service.timeoutMs is. */
const { minimum, maximum } = UPSTREAM_KEYS.timeoutMs.schema('service', {});

export function serviceSection<K extends UpstreamKeys = typeof UPSTREAM_KEYS>(keys: K = UPSTREAM_KEYS as unknown as K) {
  return Type.Object(
    {
      ...upstreamProperties('service', keys),
      tokenTimeoutMs: Type.Integer({ maximum: MAX_TIMER_MS, minimum: 100, default: 10000, description: 'Deadline for one gentoken request, in milliseconds.' }),
      // A route's setting: compiled into its policy (shared/routes.ts), applied by its engines.
      pathTimeouts: Type.Optional(Type.Array(Type.Object({
        pathPrefix: Type.String({ pattern: '^/', maxLength: 1024, description: 'Path prefix, matched as plain text against the request\'s path and query as the client sends it.' }),
        timeoutMs: Type.Integer({ minimum, maximum, description: 'Deadline for a request under pathPrefix, in milliseconds, instead of service.timeoutMs.' }),
      }, { additionalProperties: false }), {
        default: [],
        description: 'Deadlines per path prefix: a request whose path starts with pathPrefix gets timeoutMs instead of service.timeoutMs (→ 504), and may pause that long while its body streams (at least proxy.idleTimeoutMs); the longest matching prefix wins, then the first listed.',
      })),
    },
    { additionalProperties: false },
  );
}

export function localizationSection<K extends UpstreamKeys = typeof UPSTREAM_KEYS>(keys: K = UPSTREAM_KEYS as unknown as K) {
  return Type.Object(
    {
      ...upstreamProperties('localization', keys),
      token: Type.Optional(Type.String({ minLength: 1, description: 'API token, sent as "Authorization: Token <token>"; omit for public projects.', 'x-env': envNameOf(['localization', 'token']), 'x-secret': true })),
      tokenFile: Type.Optional(Type.String({ minLength: 1, description: 'File holding the API token (re-read on change).', 'x-env': envNameOf(['localization', 'tokenFile']), ...reread, 'x-secret-file': true })),
      pathPrefix: Type.String({ pattern: '^/[A-Za-z0-9._~-]+$', default: routeDeclaration('localization').prefix, description: 'Requests under this prefix on the proxy listener go to the localization server (GET and HEAD only).' }),
      watch: Type.Array(Type.String({ minLength: 1 }), { default: [], description: 'Translations (project/[category/]component/language) exported as metrics.' }),
      pollIntervalSeconds: Type.Number({ maximum: Math.floor(MAX_TIMER_MS / 1000), minimum: 5, default: 300, description: 'Seconds between polls of the watched translations.' }),
    },
    { additionalProperties: false },
  );
}
