import { createLogger } from '../observability/logger.js';
import { createSystemdNotifier } from '../observability/systemd-notify.js';
import { systemClock } from '../shared/clock.js';
import { SecretSet } from '../shared/secrets.js';
import { unknownEnvWarnings } from '../config/env-warnings.js';
import { inspectorRefusal, runtimeWarnings } from '../config/runtime-risks.js';
import { ConfigError, StoppedDuringStartError } from '../shared/errors.js';
import { ListenError } from '../config/listen-error.js';
import { createSidecar, type Sidecar } from '../sidecar.js';
import { loadConfigOrExit, NO_CONFIG_FILE, reportConfigFailure } from './config-problems.js';
import type { CommandIo } from './io.js';
import { EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

/**
 * `run --config FILE`: the sidecar in the foreground, JSON logs on stdout. SIGTERM/SIGINT drain
 * gracefully (a second one exits at once), SIGHUP re-reads credential files.
 * Exit codes: 0 after a drain, 1 when it cannot start (a listener's port in use included: that
 * is often transient, so supervisors retry), 2 for invalid configuration (the same checks as
 * `check-config`, credential file contents included), printed in the same format.
 * Under systemd's Type=notify (NOTIFY_SOCKET) it reports readiness, drain and watchdog pings
 * (observability/systemd-notify.ts).
 */
export async function runCommand(args: { config?: string }, io: CommandIo): Promise<number> {
  const inspector = inspectorRefusal(io.env, io.execArgv ?? []);
  if (inspector) {
    io.stderr.write(`error: ${inspector}\n`);
    return EXIT_USAGE;
  }
  const config = await loadConfigOrExit(args.config, io);
  if (typeof config === 'number') {
    for (const warning of unknownEnvWarnings(io.env)) io.stderr.write(`warning: ${warning}
`);
    return config;
  }
  const secrets = new SecretSet();
  const logger = createLogger({ level: config.log.level, secrets, stream: io.stdout });
  for (const warning of unknownEnvWarnings(io.env)) logger.warn(warning);
  for (const warning of runtimeWarnings(io.env, io.execArgv ?? [])) logger.warn(warning);
  if (args.config === undefined) logger.info(NO_CONFIG_FILE);
  // Under systemd's Type=notify (NOTIFY_SOCKET set); otherwise a no-op.
  const notifier = createSystemdNotifier({ env: io.env, ...(io.pid !== undefined ? { pid: io.pid } : {}), clock: systemClock, logger });
  const sidecar = createSidecar(config, {
    logger, secrets, onDrain: () => notifier.stopping(),
    ...(args.config ? { configPath: args.config } : {}), ...(io.version ? { version: io.version } : {}),
  });
  try {
    // Started means the listeners are up; READY=1 waits for the first token too.
    return await serve(sidecar, io, logger, () => notifier.started(sidecar));
  } finally {
    notifier.close();
  }
}

/** Starts a sidecar and serves until it is stopped; shared by `run` and `demo`. */
export async function serve(
  sidecar: Sidecar,
  io: CommandIo,
  logger: { info(m: string, f?: object): unknown; error(m: string, f?: object): unknown; warn(m: string, f?: object): unknown },
  onStarted?: (ports: { port: number; adminPort: number }) => void,
): Promise<number> {
  let interrupted: ((code: number) => void) | undefined;
  const forced = new Promise<number>((resolve) => (interrupted = resolve));
  let signals = 0;
  const onStop = (signal: string) => {
    signals++;
    if (signals > 1) {
      logger.warn('second signal: exiting without waiting', { signal });
      interrupted?.(EXIT_INTERRUPTED);
      return;
    }
    logger.info('signal received: draining', { signal });
    void sidecar.drain();
  };
  io.onSignal('SIGTERM', () => onStop('SIGTERM'));
  io.onSignal('SIGINT', () => onStop('SIGINT'));
  io.onSignal('SIGHUP', () => void sidecar.reloadCredentials(true));
  // The entry's own listener keeps SIGUSR1 from opening the inspector (entry/early-signals.ts); this one says so in the log.
  io.onSignal('SIGUSR1', () => logger.warn('SIGUSR1 ignored: it would open Node\'s inspector, which hands out the credentials (docs/security.md)'));
  // Every wait below races a second signal: one during start-up or a stuck stop exits at once too.
  let started: { port: number; adminPort: number } | number;
  try {
    started = await Promise.race([sidecar.start(), forced]);
  } catch (err) {
    // A signal during start-up: start() gave up and stop() is already unwinding what it started.
    if (err instanceof StoppedDuringStartError) return Promise.race([sidecar.stop().then(() => EXIT_OK), forced]);
    const reason = err instanceof ConfigError ? { reason: 'invalid configuration', problems: err.problems } : { reason: (err as Error).message };
    logger.error('the sidecar could not start', { ...reason, code: (err as { code?: string }).code });
    const code = await Promise.race([sidecar.stop().then(() => EXIT_FAILURE), forced]);
    if (code === EXIT_INTERRUPTED) return code;
    // Problems only found at start (a file changed since validation) are reported like any other config problem.
    if (err instanceof ConfigError) return reportConfigFailure(err, io);
    // The log line may be filtered or collected elsewhere; the operator at a terminal reads stderr.
    // A listener's message already names its key; any other failure says what it stopped.
    io.stderr.write(`error: ${err instanceof ListenError ? '' : 'the sidecar could not start: '}${(err as Error).message}\n`);
    return EXIT_FAILURE;
  }
  if (typeof started === 'number') return started;
  onStarted?.(started);
  return Promise.race([sidecar.done.then(() => EXIT_OK), forced]);
}
