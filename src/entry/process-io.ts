import { readFileSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type CommandIo } from '../commands/io.js';
import { EXIT_FAILURE, EXIT_INTERRUPTED } from '../commands/exit-codes.js';

/**
 * The package version, read once from the package.json above the running script: `dist/cli.js`
 * (one level), `dist/lib/…` (two) or `src/entry/` in tests (two).
 */
export function packageVersion(script = process.argv[1]): string {
  if (!script) return 'unknown';
  let real: string;
  try {
    // Installed, the command is a symlink (node_modules/.bin, /usr/bin) to dist/cli.js.
    real = realpathSync(script);
  } catch {
    return 'unknown';
  }
  for (const up of ['..', '../..', '../../..']) {
    try {
      const pkg = JSON.parse(readFileSync(join(dirname(real), up, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'b2b-sidecar' && pkg.version) return pkg.version;
    } catch {
      // try the next level
    }
  }
  return 'unknown';
}

/**
 * The process side shared by the two entries, cli-bundle.ts (every command, through commander) and
 * run-bundle.ts (the plain `run` fast path): the real CommandIo, the V8 tuning and the exit code.
 * Exit codes: the one table in commands/exit-codes.ts.
 */
export const processIo: CommandIo = {
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  onSignal: (signal, handler) => process.on(signal, handler),
  version: packageVersion(),
  pid: process.pid,
  execArgv: process.execArgv,
};

/** V8 settings for serving, applied once the command's modules are loaded (see shared/v8-tuning.ts). */
export { tuneV8ForServing } from '../shared/v8-tuning.js';

/**
 * For the long-running commands (`run`, `demo`, `simulate`): keeps the process serving when a
 * reader of its output goes away (a closed pipe: EPIPE, a log collector that died, a full disk).
 * Node would throw the stream's 'error' as an uncaught exception at the next log line and stop
 * the proxy with it. Output to that stream stops for good: its write() becomes a no-op, because
 * Node keeps a failed stdio stream writable and every later line would fail again, each building
 * an error. A failed stdout is reported once on stderr; a failed stderr is not reported on stdout,
 * which is the JSON log. One-shot commands keep Node's behaviour: losing their output fails them.
 */
export function surviveLostOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.once('error', (err: NodeJS.ErrnoException) => {
      stream.on('error', () => undefined);
      stream.write = dropWrite as typeof stream.write;
      if (stream === process.stdout) process.stderr.write(`warning: stdout failed (${err.code ?? err.message}); its output stops, the process goes on\n`);
    });
  }
}

/** A write() that drops the data and still calls back, as a successful one would. */
function dropWrite(_chunk: unknown, encodingOrCallback?: unknown, callback?: unknown): boolean {
  const done = typeof encodingOrCallback === 'function' ? encodingOrCallback : callback;
  if (typeof done === 'function') process.nextTick(done as () => void);
  return true;
}

/**
 * Sets the exit code from a command's result; exits at once only after a second signal. Once the
 * command has returned, nothing it left open may keep the process (docs/traps.md: a listener a
 * failed start did not close kept the process serving, deaf to signals): a signal then ends it at
 * once, and so does a backstop after {@link LINGER_MS} once the output is flushed.
 */
export function settle(result: Promise<number>): void {
  result.then(
    (code) => {
      process.exitCode = code;
      // Only after a second signal: in-flight work is abandoned on purpose.
      if (code === EXIT_INTERRUPTED) process.exit(code);
      endSoon();
    },
    (err: unknown) => {
      processIo.stderr.write(`error: ${(err as Error).message}\n`);
      process.exitCode = EXIT_FAILURE;
      endSoon();
    },
  );
}

/** How long a finished command's process may linger on open handles before it is ended. */
const LINGER_MS = 3000;

function endSoon(): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit());
  const end = (): void => {
    // Queued output first (a slow pipe reader): the backstop must not cut the last lines.
    if (process.stdout.writableLength > 0 || process.stderr.writableLength > 0) {
      setTimeout(end, 100).unref();
      return;
    }
    process.exit();
  };
  // Unref'd: a process that ends by itself never waits for it.
  setTimeout(end, LINGER_MS).unref();
}
