import { stringify } from 'yaml';
import { redactConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import { loadConfig } from '../load-config.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE, type CommandIo } from './io.js';

/**
 * `check-config [--config FILE]`: validates the configuration (file plus environment) and prints
 * the effective config as YAML with every secret redacted. Credential files are checked for
 * readability only; their contents are never read or printed.
 *
 * @returns 0 when valid; 2 with every problem on stderr when invalid; 1 on any other failure.
 */
export async function checkConfigCommand(args: { config?: string }, io: CommandIo): Promise<number> {
  try {
    const config = await loadConfig(args.config, io.env);
    io.stdout.write(stringify(redactConfig(config)));
    return EXIT_OK;
  } catch (err) {
    if (err instanceof ConfigError) {
      io.stderr.write(`invalid configuration:\n${err.problems.map((p) => `  ${p}\n`).join('')}`);
      return EXIT_USAGE;
    }
    io.stderr.write(`check-config failed: ${err instanceof Error ? err.message : String(err)}\n`);
    return EXIT_FAILURE;
  }
}
