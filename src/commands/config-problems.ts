import type { Config } from '../config-schema.js';
import { ConfigError } from '../errors.js';
import { loadConfig } from '../load-config.js';
import { EXIT_FAILURE, EXIT_USAGE, type CommandIo } from './io.js';

/** Prints a configuration failure the way every command does; returns its exit code. */
export function reportConfigFailure(err: unknown, io: CommandIo): number {
  if (err instanceof ConfigError) {
    io.stderr.write(`invalid configuration:\n${err.problems.map((p) => `  - ${p}\n`).join('')}`);
    return EXIT_USAGE;
  }
  io.stderr.write(`error: ${(err as Error).message}\n`);
  return EXIT_FAILURE;
}

/** Loads the configuration for a command, or reports why not and returns the exit code. */
export async function loadConfigOrExit(path: string | undefined, io: CommandIo): Promise<Config | number> {
  try {
    return await loadConfig(path, io.env);
  } catch (err) {
    return reportConfigFailure(err, io);
  }
}
