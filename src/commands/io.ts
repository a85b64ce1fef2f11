/**
 * commands/: one file per CLI command, `<name>Command(args, io)` → exit code, and this file's
 * CommandIo. May import everything but src/entry/.
 */
import type { Writable } from 'node:stream';

export type Signal = 'SIGTERM' | 'SIGINT' | 'SIGHUP' | 'SIGUSR1';

/**
 * What a command may touch of the outside world. Only `entry/process-io.ts` builds the real one from
 * `process`; tests pass captured streams and their own env.
 */
export interface CommandIo {
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  /** Registers a signal handler; the command decides what the signal means. */
  onSignal(signal: Signal, handler: () => void): void;
  /** The package version (`b2b_sidecar_build_info`, the start log); absent in tests that do not care. */
  version?: string;
  /** The process id (systemd's MAINPID= and WATCHDOG_PID); absent in tests that do not care. */
  pid?: number;
  /** Node's own options (`process.execArgv`): `run` refuses the inspector (config/runtime-risks.ts). */
  execArgv?: readonly string[];
}

/** The exit codes, for callers that still take them from here: the one table is exit-codes.ts. */
export { EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNREACHABLE, EXIT_USAGE } from './exit-codes.js';
