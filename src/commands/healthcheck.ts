import { askAdmin, isSidecarAnswer, NOT_SIDECAR } from '../observability/admin-client.js';
import { adminTarget } from './admin-target.js';
import type { CommandIo } from './io.js';
import { EXIT_FAILURE, EXIT_OK } from './exit-codes.js';

/**
 * The whole check, connection to the last byte of the answer: below Docker's HEALTHCHECK
 * --timeout (5 s in the Dockerfile), so the verdict is ours, not a kill.
 */
export const HEALTHCHECK_TIMEOUT_MS = 3_000;

/**
 * `healthcheck [--config FILE] [--admin URL]`: asks `/healthz` on the admin listener that the same config
 * (file plus `B2B_*` environment, as `run` reads it) configures, for a container's HEALTHCHECK.
 * Loads only the config, never the proxy, so it stays cheap every interval.
 * Exit codes: 0 when `/healthz` answers the sidecar's 200 within the deadline; 1 on any other
 * answer (a 200 that is not the sidecar's `{"status":"ok"}` included), a
 * refusal, no answer or the deadline passing (the reason on stderr); 2 for an invalid
 * configuration (listed on stderr like every command).
 */
export async function healthcheckCommand(args: { config?: string; admin?: string }, io: CommandIo): Promise<number> {
  const base = await adminTarget('healthcheck', args, io);
  if (typeof base === 'number') return base;
  const url = new URL('/healthz', base);
  const answer = await askAdmin(url, HEALTHCHECK_TIMEOUT_MS);
  const sidecar = isSidecarAnswer('/healthz', answer);
  if (answer.status === 200 && !answer.failure && sidecar) {
    io.stdout.write(`healthy: ${url.href} answered 200\n`);
    return EXIT_OK;
  }
  // A 200 that is not the sidecar's says nothing about the sidecar: unhealthy, saying so (exit 1,
  // the code a container runtime reads as unhealthy).
  const why = answer.failure === 'timeout' ? `timeout: no complete answer within ${HEALTHCHECK_TIMEOUT_MS} ms`
    : answer.failure ?? `${NOT_SIDECAR} /healthz (answered ${answer.status})`;
  io.stderr.write(`unhealthy: ${url.href} ${why}\n`);
  return EXIT_FAILURE;
}
