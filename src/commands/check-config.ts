import { stringify } from 'yaml';
import { inspectorRefusal } from '../config/runtime-risks.js';
import { redactConfig } from '../config/validate-config.js';
import { loadConfigOrExit, NO_CONFIG_FILE, reportConfigFailure, startupWarnings } from './config-problems.js';
import type { CommandIo } from './io.js';
import { EXIT_OK, EXIT_USAGE } from './exit-codes.js';

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
  const config = await loadConfigOrExit(args.config, io);
  for (const warning of startupWarnings(io.env, typeof config === 'number' ? undefined : config, io.execArgv)) io.stderr.write(`warning: ${warning}\n`);
  if (typeof config === 'number') return config;
  // run's verdict on the same environment (a NODE_OPTIONS with --inspect makes run exit 2 too).
  const inspector = inspectorRefusal(io.env, []);
  if (inspector) {
    io.stderr.write(`error: ${inspector}\n`);
    return EXIT_USAGE;
  }
  if (args.config === undefined) io.stderr.write(`note: ${NO_CONFIG_FILE}\n`);
  try {
    io.stdout.write(stringify(redactConfig(config)));
    return EXIT_OK;
  } catch (err) {
    return reportConfigFailure(err, io);
  }
}
