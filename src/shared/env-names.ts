/**
 * The naming rule of the environment variables that override config keys (docs/architecture.md,
 * "Add a setting"): `B2B_` + the key's path in upper snake case, where the section names `service`
 * and `credentials` are left out and `localization` is written `L10N`. So `service.baseUrl` is
 * `B2B_BASE_URL`, `credentials.apiKeyFile` `B2B_API_KEY_FILE`, `localization.baseUrl`
 * `B2B_L10N_BASE_URL`, `listen.port` `B2B_LISTEN_PORT`. A test holds every `x-env` of the schema to it.
 */
const SECTION_WORD: Readonly<Record<string, string | undefined>> = { service: '', credentials: '', localization: 'L10N' };

/** `baseUrl` → `BASE_URL`, `rkObjectId` → `RK_OBJECT_ID`. */
export const upperSnake = (name: string): string => name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();

/** The environment variable the rule gives the key at `path` (section first). */
export function envNameOf(path: readonly string[]): string {
  const [section, ...rest] = path;
  if (section === undefined || rest.length === 0) throw new Error(`an environment variable names a key inside a section, not ${path.join('.')}`);
  const word = SECTION_WORD[section] ?? upperSnake(section);
  return ['B2B', ...(word === '' ? [] : [word]), ...rest.map(upperSnake)].join('_');
}
