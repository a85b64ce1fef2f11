/**
 * The `credentials` key and the `readiness` section (schema.ts places them): one credential set
 * (the object form, id `default`) or a list of sets, each with its own id and selectors. One node
 * holds both forms (`type: [object, array]`): its `properties` are the object form's keys (the
 * environment variables apply there only) and its `items` a set of the list (docs/credential-sets.md).
 * Only config/credential-sets.ts tells the two forms apart.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { CREDENTIAL_ID_PATTERN } from './credential-id.js';

const env = (name: string) => ({ 'x-env': name });
const secret = { 'x-secret': true };
const reread = { 'x-reload': 'file re-read' };
const secretFile = { 'x-secret-file': true };

/** Most sets in one process (the benchmark's 1,000 with room to spare). */
export const MAX_CREDENTIAL_SETS = 10_000;

/** The keys every set has; `envs` only in the object form (one variable cannot say which set it means). */
function setKeys(envs: boolean) {
  const e = (name: string) => (envs ? env(name) : {});
  return {
    apiKey: Type.Optional(Type.String({ minLength: 1, description: 'The ApiKey issued by the support team.', ...e('B2B_API_KEY'), ...secret })),
    apiKeyFile: Type.Optional(Type.String({ minLength: 1, description: 'File holding the ApiKey (re-read on change and on SIGHUP).', ...e('B2B_API_KEY_FILE'), ...reread, ...secretFile })),
    password: Type.Optional(Type.String({ minLength: 1, description: 'The password belonging to the ApiKey.', ...e('B2B_PASSWORD'), ...secret })),
    passwordFile: Type.Optional(Type.String({ minLength: 1, description: 'File holding the password (re-read on change and on SIGHUP).', ...e('B2B_PASSWORD_FILE'), ...reread, ...secretFile })),
    rkObjectId: Type.Optional(Type.String({ minLength: 1, description: 'Code of the integrator\'s object (rkObjectId), available to attach templates.', ...e('B2B_RK_OBJECT_ID') })),
  };
}

const SingleSchema = Type.Object(setKeys(true), { additionalProperties: false });

const SetListen = Type.Object(
  {
    host: Type.Optional(Type.String({ minLength: 1, description: 'Address this set\'s own listener binds to (default 127.0.0.1); with port.' })),
    port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535, description: 'TCP port of this set\'s own listener (0 picks a free port); every request there uses this set.' })),
    socket: Type.Optional(Type.String({ pattern: '^/', description: 'Or a unix socket (an absolute path) for this set alone; its file mode is the guard, as for listen.socket.' })),
    socketMode: Type.Optional(Type.String({ pattern: '^0?[0-7]{3}$', description: 'File mode of this set\'s socket (octal; default 0660).' })),
    socketGroup: Type.Optional(Type.String({ minLength: 1, description: 'Group (name or number) given to this set\'s socket.' })),
  },
  { additionalProperties: false },
);

const EntrySchema = Type.Object(
  {
    id: Type.String({ pattern: CREDENTIAL_ID_PATTERN, description: 'The set\'s name: lower-case letters, digits, - and _ (at most 63); the credential label of its metrics, ?credential= of /readyz, the B2B-Credential header value, the token file\'s suffix.' }),
    ...setKeys(false),
    baseUrl: Type.Optional(Type.String({ minLength: 1, description: 'This set\'s installation of the service, when not service.baseUrl (the other service.* settings apply to it too). Sets with the same address share one connection pool.' })),
    listen: Type.Optional(SetListen),
    pathPrefix: Type.Optional(Type.String({ minLength: 2, description: 'On the shared listener, requests under this prefix (starting and ending with /, e.g. /objects-12/) use this set; the prefix is removed before forwarding and put back into Location answers.' })),
    headerAllow: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { description: 'Sources (addresses or CIDRs, checked like guard.allow) that may choose this set with the B2B-Credential header on the shared listener.' })),
  },
  { additionalProperties: false },
);

export type SingleCredentials = Static<typeof SingleSchema>;
export type CredentialSetEntry = Static<typeof EntrySchema>;

/**
 * The `credentials` node: the object form's properties and the list form's items on one node, so
 * the walker (walk.ts), the README table and the example check see both (`credentials.apiKey`,
 * `credentials[].id`). ajv applies `properties` to an object and `items` to an array.
 */
export function credentialsSchema() {
  const node = {
    type: ['object', 'array'],
    description: 'The ApiKey and password: one set (an object), or a list of sets each with an id (docs/credential-sets.md).',
    properties: SingleSchema.properties,
    additionalProperties: false,
    items: EntrySchema,
    minItems: 1,
    maxItems: MAX_CREDENTIAL_SETS,
    default: {},
  };
  return Type.Unsafe<SingleCredentials | CredentialSetEntry[]>(node as unknown as TSchema);
}

/** `readiness`: what /readyz requires of the credential sets. */
export function readinessSection() {
  return Type.Object(
    {
      credentials: Type.Union([Type.Literal('all'), Type.Literal('any')], {
        default: 'all',
        description: 'With several credential sets: /readyz is ready when every set holds a valid token (all) or when at least one does (any); /readyz?credential=<id> answers for one set.',
      }),
    },
    { additionalProperties: false, default: {} },
  );
}
