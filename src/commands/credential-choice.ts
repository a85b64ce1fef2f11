import type { Config } from '../config/schema.js';
import { tokenFileFor, type CredentialSet } from '../config/credential-sets.js';
import type { CommandIo } from './io.js';
import { EXIT_USAGE } from './exit-codes.js';

/**
 * `--credential <id>` of `doctor` and `token`: the sets the command works on, the named one or,
 * without the option, every set. An id the config does not have is a usage error (exit 2) that
 * lists the ids it has. The command then runs on {@link configForSet}: the config as that set
 * alone, so every piece that reads `credentials` and `service.baseUrl` works unchanged.
 */
export function chooseCredentialSets<T extends Pick<CredentialSet, 'id'>>(command: string, sets: readonly T[], id: string | undefined, io: CommandIo): T[] | number {
  if (id === undefined) return [...sets];
  const set = sets.find((s) => s.id === id);
  if (set) return [set];
  io.stderr.write(`${command}: no credential set has the id ${JSON.stringify(id)}; the config's sets: ${knownIds(sets)}\n`);
  return EXIT_USAGE;
}

/** As {@link chooseCredentialSets}, for a command that works on one set: with several, `--credential` is needed (exit 2). */
export function chooseOneCredentialSet<T extends Pick<CredentialSet, 'id'>>(command: string, sets: readonly T[], id: string | undefined, io: CommandIo): T | number {
  const chosen = chooseCredentialSets(command, sets, id, io);
  if (typeof chosen === 'number') return chosen;
  if (chosen.length === 1) return chosen[0]!;
  io.stderr.write(`${command}: the config has ${chosen.length} credential sets (${knownIds(chosen)}): name one with --credential <id>\n`);
  return EXIT_USAGE;
}

/** The ids, for a message: `a, b, c`. */
export function knownIds(sets: readonly Pick<CredentialSet, 'id'>[]): string {
  return sets.map((s) => s.id).join(', ');
}

/** What of a set makes a config of it alone: its keys, its installation and its token file's name. */
type SetKeys = Partial<Pick<CredentialSet, 'id' | 'apiKey' | 'apiKeyFile' | 'password' | 'passwordFile' | 'rkObjectId' | 'baseUrl' | 'single'>>;

/**
 * The config as one set alone: its keys as `credentials`, its `baseUrl` (if any) as the service's,
 * and the token file `run` writes for it (`<file>.<id>` in the list form) as `token.file`.
 */
export function configForSet(config: Config, set: SetKeys): Config {
  const file = config.token.file;
  return {
    ...config,
    credentials: credentialKeys(set),
    ...(set.baseUrl !== undefined ? { service: { ...config.service, baseUrl: set.baseUrl } } : {}),
    ...(file && set.id !== undefined && set.single === false ? { token: { ...config.token, file: tokenFileFor(file, { id: set.id, single: false }) } } : {}),
  };
}

/** A set's keys in the shape of the single form of `credentials` (what the credential store reads). */
export function credentialKeys(set: SetKeys): Config['credentials'] {
  const { apiKey, apiKeyFile, password, passwordFile, rkObjectId } = set;
  return Object.fromEntries(Object.entries({ apiKey, apiKeyFile, password, passwordFile, rkObjectId }).filter(([, v]) => v !== undefined)) as Config['credentials'];
}
