import { adminBaseUrl } from '../observability/admin-client.js';
import { loadAdminSectionOrExit } from './config-problems.js';
import { EXIT_USAGE } from './exit-codes.js';
import type { CommandIo } from './io.js';

/**
 * Where a command that reads the running sidecar (`wait`, `healthcheck`, `status`) finds its admin
 * listener: `--admin URL` when given (an http:// URL), else the config's `admin` section (file plus
 * its `B2B_*` overrides; without --config the defaults, 127.0.0.1:9464; a wildcard bind is asked
 * on loopback). Nothing else of the config is validated or read: credentials the caller cannot
 * read, or no service.baseUrl, do not stop these commands. Returns the base URL, or the exit code
 * after saying why not on stderr (2: a bad option, an unreadable config file or a bad admin key).
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
  const admin = await loadAdminSectionOrExit(args.config, io);
  if (typeof admin === 'number') return admin;
  return adminBaseUrl(admin);
}
