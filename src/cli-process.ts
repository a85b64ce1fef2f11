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

/** V8 settings for serving, applied once the command's modules are loaded (see shared/v8-tuning.ts). */
export { tuneV8ForServing } from './shared/v8-tuning.js';

/**
 * Keeps the process alive when a reader of its output goes away (a closed pipe: EPIPE, a log
 * collector that died): Node would throw the stream's 'error' as an uncaught exception at the
 * next log line and stop the proxy with it. Serving matters more than its log: output to that
 * stream stops (a destroyed stream drops later writes without another 'error') and the other
 * stream says so once, if it still can. Called once by each entry, before the command runs.
 */
export function surviveLostOutput(): void {
  const streams = [process.stdout, process.stderr] as const;
  for (const [i, stream] of streams.entries()) {
    const other = streams[1 - i]!;
    const name = i === 0 ? 'stdout' : 'stderr';
    stream.once('error', (err: NodeJS.ErrnoException) => {
      stream.on('error', () => undefined);
      if (!other.destroyed) other.write(`warning: ${name} failed (${err.code ?? err.message}); its output stops, the process goes on\n`);
    });
  }
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
