import { request } from 'node:http';
import { connectHost } from '../shared/local-address.js';
import { loadConfigOrExit } from './config-problems.js';
import { EXIT_FAILURE, EXIT_OK, type CommandIo } from './io.js';

/** Below Docker's HEALTHCHECK --timeout (5 s in the Dockerfile), so the answer is ours, not a kill. */
export const HEALTHCHECK_TIMEOUT_MS = 3_000;

/**
 * `healthcheck [--config FILE]`: asks `/healthz` on the admin listener that the same config
 * (file plus `B2B_*` environment, as `run` reads it) configures, for a container's HEALTHCHECK.
 * Loads only the config, never the proxy, so it stays cheap every interval.
 * Exit codes: 0 when `/healthz` answers 200; 1 on any other answer, no answer or a timeout;
 * 2 for an invalid configuration (listed on stderr like every command).
 */
export async function healthcheckCommand(args: { config?: string }, io: CommandIo): Promise<number> {
  const config = await loadConfigOrExit(args.config, io);
  if (typeof config === 'number') return config;
  const host = connectHost(config.admin.host);
  const where = `http://${host.includes(':') ? `[${host}]` : host}:${config.admin.port}/healthz`;
  const status = await getStatus(host, config.admin.port, HEALTHCHECK_TIMEOUT_MS);
  if (status === 200) {
    io.stdout.write(`healthy: ${where} answered 200\n`);
    return EXIT_OK;
  }
  io.stderr.write(`unhealthy: ${where} ${typeof status === 'number' ? `answered ${status}` : status}\n`);
  return EXIT_FAILURE;
}

export { connectHost };

/** The status of `GET /healthz`, or why there was none. */
function getStatus(host: string, port: number, timeoutMs: number): Promise<number | string> {
  return new Promise((resolve) => {
    const req = request({ host, port, path: '/healthz', method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => {
      req.destroy();
      resolve(`did not answer within ${timeoutMs} ms`);
    });
    req.on('error', (err: NodeJS.ErrnoException) => resolve(`could not be reached (${err.code ?? err.message})`));
    req.end();
  });
}
