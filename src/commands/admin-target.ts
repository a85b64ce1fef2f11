import { adminBaseUrl } from '../observability/admin-client.js';
import { loadConfigOrExit } from './config-problems.js';
import { EXIT_USAGE } from './exit-codes.js';
import type { CommandIo } from './io.js';

/**
 * Where a command that reads the running sidecar (`wait`, `healthcheck`, `status`) finds its admin
 * listener: `--admin URL` when given (an http:// URL), else the admin address of the config (file
 * plus `B2B_*` environment, as `run` reads it; a wildcard bind is asked on loopback). Returns the
 * base URL, or the exit code after saying why not on stderr (2: a bad option or configuration).
 */
export async function adminTarget(command: string, args: { config?: string; admin?: string }, io: CommandIo): Promise<URL | number> {
  if (args.admin !== undefined) {
    try {
      const base = new URL(args.admin);
      if (base.protocol !== 'http:') throw new Error('not http');
      return base;
    } catch {
      io.stderr.write(`${command}: --admin must be the admin listener's http:// URL, e.g. http://127.0.0.1:9464, got ${JSON.stringify(args.admin)}\n`);
      return EXIT_USAGE;
    }
  }
  const config = await loadConfigOrExit(args.config, io);
  if (typeof config === 'number') return config;
  return adminBaseUrl(config.admin);
}
