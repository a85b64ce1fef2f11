import { setFlagsFromString } from 'node:v8';
import { EXIT_INTERRUPTED, type CommandIo } from './commands/io.js';

/**
 * The process side shared by the two entries, cli.ts (every command, through commander) and
 * cli-run.ts (the plain `run` fast path): the real CommandIo, the V8 tuning and the exit code.
 * Exit codes: 0 ok, 1 runtime failure, 2 invalid configuration or usage.
 */
export const processIo: CommandIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  onSignal: (signal, handler) => process.on(signal, handler),
};

/**
 * V8 settings for a long-running proxy (bench/results/findings.md), applied once the command's
 * modules are loaded: after any V8 flag change Node rejects the code cache of its own built-in
 * modules, which then load ~3× slower. That happens for flags given on the command line or in
 * NODE_OPTIONS too, which is why these are not set there.
 * - `--liftoff-only`: undici parses HTTP/1.1 with llhttp compiled to WebAssembly, and V8's
 *   optimising tier recompiled that module in the background after the first requests: a ~35 MB
 *   resident-memory spike and ~9 MB kept, for no measurable gain per request. Wasm flags are read
 *   at compile time, i.e. at the first connection.
 * - `--semi-space-growth-factor=1`: the young generation keeps the size it reached at start-up
 *   instead of doubling up to 2 × 16 MB under load (the largest part of peak RSS at 50 connections).
 */
export function tuneV8ForServing(): void {
  setFlagsFromString('--liftoff-only');
  setFlagsFromString('--semi-space-growth-factor=1');
}

/** Sets the exit code from a command's result; exits at once only after a second signal. */
export function settle(result: Promise<number>): void {
  result.then(
    (code) => {
      process.exitCode = code;
      // Only after a second signal: in-flight work is abandoned on purpose.
      if (code === EXIT_INTERRUPTED) process.exit(code);
    },
    (err: unknown) => {
      processIo.stderr.write(`error: ${(err as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
