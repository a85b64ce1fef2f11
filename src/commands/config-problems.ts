import { ConfigError } from '../errors.js';
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
