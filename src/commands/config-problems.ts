import type { Config } from '../config/schema.js';
import { configWarnings } from '../config/warnings.js';
import { unknownEnvWarnings } from '../config/env-warnings.js';
import { runtimeWarnings } from '../config/runtime-risks.js';
import { ConfigError } from '../shared/errors.js';
import { loadAdminSection, loadConfig, type AdminSection } from '../config/load-config.js';
import type { CommandIo } from './io.js';
import { EXIT_FAILURE, EXIT_USAGE } from './exit-codes.js';

/**
 * Prints a configuration failure the way every command does (check-config, run, token, ...);
 * returns its exit code. One format, so the same config gets the same listing everywhere.
 */
export function reportConfigFailure(err: unknown, io: CommandIo): number {
  if (err instanceof ConfigError) {
    io.stderr.write(formatConfigProblems(err.problems));
    return EXIT_USAGE;
  }
  io.stderr.write(`error: ${(err as Error).message}\n`);
  return EXIT_FAILURE;
}

/** `invalid configuration:` and one `  - key (ENV): reason` line per problem. */
export function formatConfigProblems(problems: readonly string[]): string {
  return `invalid configuration:\n${problems.map((p) => `  - ${p}\n`).join('')}`;
}

/** Loads the configuration for a command, or reports why not and returns the exit code. */
export async function loadConfigOrExit(path: string | undefined, io: CommandIo): Promise<Config | number> {
  try {
    return await loadConfig(path, io.env);
  } catch (err) {
    const code = reportConfigFailure(err, io);
    // Forgetting --config reads as "every key is missing"; say where the settings were looked for.
    if (path === undefined && err instanceof ConfigError) io.stderr.write(`(${NO_CONFIG_FILE})\n`);
    return code;
  }
}

/** The admin section alone (`status`, `wait`, `healthcheck`), or reports why not and returns the exit code. */
export async function loadAdminSectionOrExit(path: string | undefined, io: CommandIo): Promise<AdminSection | number> {
  try {
    return await loadAdminSection(path, io.env);
  } catch (err) {
    return reportConfigFailure(err, io);
  }
}

/** What a command without `--config` reads; printed (or logged) so a forgotten option is seen. */
export const NO_CONFIG_FILE = 'no --config given: the configuration comes from B2B_* environment variables only';

/**
 * Warnings about the environment (unknown `B2B_*` variables, runtime switches that leak
 * credentials) and, once the config is valid, about the config itself; commands without a logger
 * print them on stderr as `warning: ...`.
 */
export function startupWarnings(env: NodeJS.ProcessEnv, config?: Config, execArgv: readonly string[] = []): string[] {
  return [...unknownEnvWarnings(env), ...runtimeWarnings(env, execArgv), ...(config ? configWarnings(config).map((w) => w.message) : [])];
}
