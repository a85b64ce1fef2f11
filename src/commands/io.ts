/**
 * commands/: one file per CLI command, `<name>Command(args, io)` → exit code, and this file's
 * CommandIo. May import everything but src/entry/.
 */
import type { Writable } from 'node:stream';

export type Signal = 'SIGTERM' | 'SIGINT' | 'SIGHUP';

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
}

/** Exit codes of every command. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** Returned after a second signal: the entry point exits at once instead of waiting. */
export const EXIT_INTERRUPTED = 130;
