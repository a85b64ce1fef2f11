import { askAdmin, NOT_SIDECAR } from '../observability/admin-client.js';
import { statusText, type SidecarStatus } from '../observability/status.js';
import { adminTarget } from './admin-target.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_UNREACHABLE } from './exit-codes.js';
import type { CommandIo } from './io.js';

/** Arguments of `status`. */
export interface StatusArgs {
  config?: string;
  /** The admin listener's base URL (`http://127.0.0.1:9464`); from the config when absent. */
  admin?: string;
  json?: boolean;
}

/** The whole ask, connection to the last byte of the answer. */
export const STATUS_TIMEOUT_MS = 3_000;

/**
 * `status [--json] [--admin URL] [--config FILE]`: reads `GET /status` of the running sidecar and
 * prints it: the verdict on the first line, then the token, the last refresh error, the warnings,
 * the listeners and the build; `--json` prints the status as the sidecar answered it.
 * Exit codes (exit-codes.ts): 0 ready (warnings may be shown), 1 not ready, 2 a bad option or
 * configuration, 3 the admin listener cannot be reached (nothing listens, a refusal, no answer in
 * time, or an answer that is not the sidecar's status: no status shape or no build information).
 */
export async function statusCommand(args: StatusArgs, io: CommandIo): Promise<number> {
  const base = await adminTarget('status', args, io);
  if (typeof base === 'number') return base;
  const url = new URL('/status', base);
  const answer = await askAdmin(url, STATUS_TIMEOUT_MS);
  const status = answer.status === 200 && !answer.failure && isStatus(answer.body) ? answer.body : undefined;
  if (!status) {
    const why = answer.failure === 'timeout' ? `timeout: no complete answer within ${STATUS_TIMEOUT_MS} ms`
      : answer.failure ?? `${NOT_SIDECAR} /status: no status with build information (another program on this port, or a b2b-sidecar older than the status command?)`;
    if (args.json) io.stdout.write(`${JSON.stringify({ state: 'unreachable', admin: url.href, message: why })}\n`);
    io.stderr.write(`unreachable: ${url.href} ${why}\n`);
    return EXIT_UNREACHABLE;
  }
  io.stdout.write(args.json ? `${JSON.stringify(status, null, 2)}\n` : statusText(status));
  return status.ready ? EXIT_OK : EXIT_FAILURE;
}

/**
 * The shape statusText reads, and the build information every sidecar's status carries: an answer
 * without it is not the sidecar's, whatever its `ready` says (its strings are already printable:
 * admin-client.ts).
 */
function isStatus(body: unknown): body is SidecarStatus {
  const b = body as Partial<SidecarStatus> | undefined;
  const strings = (o: object, keys: readonly string[]) => keys.every((k) => (o as Record<string, unknown>)[k] === undefined || typeof (o as Record<string, unknown>)[k] === 'string');
  return typeof b?.state === 'string' && typeof b.ready === 'boolean' && typeof b.live === 'boolean' && typeof b.at === 'string'
    && Array.isArray(b.warnings) && b.warnings.every((w) => typeof w === 'string')
    && typeof b.listeners === 'object' && b.listeners !== null && !Array.isArray(b.listeners) && strings(b.listeners, ['proxy', 'admin', 'socket'])
    && typeof b.build === 'object' && b.build !== null && typeof b.build.version === 'string' && b.build.version !== '' && typeof b.build.node === 'string' && b.build.node !== ''
    && (b.token === undefined || (typeof b.token === 'object' && b.token !== null));
}
