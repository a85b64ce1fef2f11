import { stringify } from 'yaml';
import { redactConfig } from '../config/validate-config.js';
import { loadConfig } from '../config/load-config.js';
import { reportConfigFailure, startupWarnings } from './config-problems.js';
import { EXIT_OK, type CommandIo } from './io.js';

/**
 * `check-config [--config FILE]`: validates the configuration (file plus environment) exactly as
 * `run` does at start (the same `loadConfig`), and prints the effective config as YAML with every
 * secret redacted. Credential files are read and checked by the credential store's rules; their
 * contents are never printed. Warnings (unknown B2B_* variables, guard.allowAnyone, ...) go to
 * stderr as `warning: ...` lines.
 *
 * @returns 0 when valid; 2 with every problem on stderr when invalid; 1 on any other failure.
 */
export async function checkConfigCommand(args: { config?: string }, io: CommandIo): Promise<number> {
  try {
    const config = await loadConfig(args.config, io.env);
    for (const warning of startupWarnings(io.env, config)) io.stderr.write(`warning: ${warning}\n`);
    io.stdout.write(stringify(redactConfig(config)));
    return EXIT_OK;
  } catch (err) {
    const code = reportConfigFailure(err, io);
    for (const warning of startupWarnings(io.env)) io.stderr.write(`warning: ${warning}\n`);
    return code;
  }
}
