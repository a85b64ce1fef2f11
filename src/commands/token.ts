import type { Config } from '../config/schema.js';
import { createCredentialStore } from '../token/credential-store.js';
import { ConfigError, TokenUnauthorizedError } from '../shared/errors.js';
import { createLogger } from '../observability/logger.js';
import { SecretSet } from '../shared/secrets.js';
import { tokenClientOn } from '../service/service-part.js';
import type { TokenClient } from '../token/token-client.js';
import { openUpstream, type Upstream } from '../upstream/open-upstream.js';
import { findRunningSidecar } from '../doctor/running-sidecar.js';
import { loadConfigOrExit, reportConfigFailure, startupWarnings } from './config-problems.js';
import { credentialSets, storeLabel } from '../config/credential-sets.js';
import type { CommandIo } from './io.js';
import { chooseOneCredentialSet, configForSet } from './credential-choice.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

/** Arguments of `token`. */
export interface TokenArgs {
  config?: string;
  /** Print the whole AuthResult. */
  json?: boolean;
  /** Obtain a token even when a sidecar with this config runs (it may revoke the one it holds). */
  ownToken?: boolean;
  /** The id of the credential set whose token to obtain; needed when the config has several. */
  credential?: string;
}

/**
 * `token --config FILE [--json] [--own-token] [--credential ID]`: obtains one token and prints it
 * (`--json`: the whole AuthResult); with several credential sets, of the set `--credential` names. Printing the token is this command's purpose; it is never logged.
 * Beside a running sidecar with the same config (its admin address answers) it refuses unless
 * `--own-token` is given: at a vendor that keeps one token per ApiKey, a new token revokes the one
 * the sidecar holds, and the sidecar's token is not handed out (`token.file` is the way to share it).
 * Exit codes: 0 ok, 1 on a 401 (with the server's message), a running sidecar or any failure, 2
 * for invalid configuration (including credential files that are empty or unusable), an unknown
 * `--credential` id, or none with several sets. `preloaded`: a config already loaded and
 * validated, used instead of loading `args.config` (tests).
 */
export async function tokenCommand(args: TokenArgs, io: CommandIo, preloaded?: Config): Promise<number> {
  const config = preloaded ?? await loadConfigOrExit(args.config, io);
  for (const warning of startupWarnings(io.env)) io.stderr.write(`warning: ${warning}\n`);
  if (typeof config === 'number') return config;
  const chosen = chooseOneCredentialSet('token', credentialSets(config), args.credential, io);
  if (typeof chosen === 'number') return chosen;
  const set = configForSet(config, chosen);
  // One set of several: that set's readiness, and the token file `run` writes for it.
  const running = args.ownToken ? undefined : await findRunningSidecar(config, undefined, chosen.single ? undefined : chosen.id);
  if (running) {
    const state = running.ready ? 'holds a valid token' : `holds no valid token (${running.reason ?? 'not ready'})`;
    const file = set.token.file ? `; it writes the token it holds to token.file (${set.token.file})` : '';
    io.stderr.write(`token: not obtained: a b2b-sidecar with this config answers on ${running.admin} and ${state}. At a vendor that keeps one token per ApiKey a new token revokes the one it holds. To check the credentials and the set-up, run doctor (it probes through the sidecar)${file}; to obtain a token anyway, add --own-token\n`);
    return EXIT_FAILURE;
  }
  const secrets = new SecretSet();
  const logger = createLogger({ level: 'error', secrets, stream: io.stderr });
  const store = await createCredentialStore(chosen, { logger, secrets, ...storeLabel(chosen) }).catch((err: Error) => err);
  if (store instanceof ConfigError) return reportConfigFailure(store, io);
  if (store instanceof Error) {
    io.stderr.write(`error: ${secrets.redact(store.message)}\n`);
    return EXIT_FAILURE;
  }
  let upstream: Upstream;
  let client: TokenClient;
  try {
    upstream = await openUpstream('service', set.service, { env: io.env, secrets });
    client = tokenClientOn(set, upstream);
  } catch (err) {
    // A CA file, proxy or client certificate run would refuse too (check-config names the key).
    store.close();
    io.stderr.write(`error: ${secrets.redact((err as Error).message)}\n`);
    return EXIT_USAGE;
  }
  try {
    const result = await client.requestToken(store.current());
    io.stdout.write(args.json ? `${JSON.stringify(result, null, 2)}\n` : `${result.token}\n`);
    return EXIT_OK;
  } catch (err) {
    const message = err instanceof TokenUnauthorizedError ? `credentials rejected (401): ${err.serverMessage}` : (err as Error).message;
    io.stderr.write(`error: ${secrets.redact(message)}\n`);
    return EXIT_FAILURE;
  } finally {
    store.close();
    await upstream.close();
  }
}
