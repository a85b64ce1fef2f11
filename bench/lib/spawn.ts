import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { childPids, hasCommand } from './proc.js';

/** CPU layout: the proxy alone on CPU 1, load generator + upstream (+ this script) on CPU 0. */
export const PROXY_CPU = 1;
export const LOAD_CPU = 0;
export const HAS_TASKSET = hasCommand('taskset');

const MAX_LINES = 2000;

/** A child process this benchmark started; every one is killed when the benchmark ends, even on failure. */
export interface Managed {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** performance.now() just before spawn. */
  readonly spawnedAt: number;
  /**
   * Recent stdout and stderr lines: the last 2000 only, so neither its length nor a slice of it
   * tells what arrived since some moment in a long run. Use `onLine` for that.
   */
  readonly lines: string[];
  /** Calls `listener` with every later stdout and stderr line, however many. */
  onLine(listener: (line: string) => void): void;
  /** Resolves with the first line (already seen or future) matching `pred`; rejects on exit or timeout. */
  waitForLine(pred: (line: string) => boolean, timeoutMs: number): Promise<string>;
  readonly exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL (children too) after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

const live = new Set<Managed>();
let cleanupInstalled = false;

/** Pins the current process (the orchestrator) to the load CPU, when taskset exists. */
export function pinSelf(): void {
  if (!HAS_TASKSET) return;
  spawn('taskset', ['-a', '-pc', String(LOAD_CPU), String(process.pid)], { stdio: 'ignore' });
}

export function spawnManaged(
  name: string, cmd: string, args: string[],
  opts: { cpu?: number; env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Managed {
  installCleanup();
  const [file, argv] = opts.cpu !== undefined && HAS_TASKSET ? ['taskset', ['-c', String(opts.cpu), cmd, ...args]] : [cmd, args];
  const spawnedAt = performance.now();
  // taskset execs the command, so the pid is the command's own.
  const child = spawn(file, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env, cwd: opts.cwd });
  const lines: string[] = [];
  const waiters = new Set<{ pred: (l: string) => boolean; resolve: (l: string) => void; reject: (e: Error) => void }>();
  const listeners: Array<(line: string) => void> = [];
  const onLine = (line: string) => {
    for (const l of listeners) l(line);
    lines.push(line);
    if (lines.length > MAX_LINES) lines.splice(0, lines.length - MAX_LINES);
    for (const w of waiters) {
      if (w.pred(line)) {
        waiters.delete(w);
        w.resolve(line);
      }
    }
  };
  createInterface({ input: child.stdout! }).on('line', onLine);
  createInterface({ input: child.stderr! }).on('line', onLine);
  let exitCode: number | null | undefined;
  const exited = new Promise<number | null>((resolve) => {
    child.once('error', (err) => {
      onLine(`spawn error: ${err.message}`);
      exitCode = -1;
      resolve(-1);
    });
    child.once('exit', (code, signal) => {
      exitCode = code ?? (signal ? -1 : null);
      resolve(exitCode);
    });
  });
  const managed: Managed = {
    name, pid: child.pid ?? -1, child, spawnedAt, lines, exited,
    onLine(listener) {
      listeners.push(listener);
    },
    waitForLine(pred, timeoutMs) {
      const seen = lines.find(pred);
      if (seen !== undefined) return Promise.resolve(seen);
      if (exitCode !== undefined) return Promise.reject(exitError());
      return new Promise<string>((resolve, reject) => {
        const w = {
          pred,
          resolve: (l: string) => { clearTimeout(timer); resolve(l); },
          reject: (e: Error) => { clearTimeout(timer); reject(e); },
        };
        const timer = setTimeout(() => {
          waiters.delete(w);
          reject(new Error(`${name}: no expected output within ${timeoutMs} ms; last lines:\n${lines.slice(-15).join('\n')}`));
        }, timeoutMs);
        waiters.add(w);
        void exited.then(() => {
          if (waiters.delete(w)) w.reject(exitError());
        });
      });
    },
    async stop(graceMs = 3000) {
      if (exitCode === undefined && child.pid) {
        const kids = childPids(child.pid);
        child.kill('SIGTERM');
        const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), graceMs).unref());
        if ((await Promise.race([exited, timer])) === 'timeout') {
          for (const pid of kids) tryKill(pid, 'SIGKILL');
          child.kill('SIGKILL');
          await exited;
        }
      }
      live.delete(managed);
    },
  };
  function exitError() {
    return new Error(`${name} exited (code ${String(exitCode)}); last lines:\n${lines.slice(-15).join('\n')}`);
  }
  live.add(managed);
  void exited.then(() => live.delete(managed));
  return managed;
}

function tryKill(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** Stops every process still running (in reverse start order). */
export async function stopAll(): Promise<void> {
  for (const m of [...live].reverse()) await m.stop(2000);
}

function installCleanup() {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  // Last resort: whatever is still alive when this process exits is killed, with its children.
  process.on('exit', () => {
    for (const m of live) {
      if (m.child.pid) for (const pid of childPids(m.child.pid)) tryKill(pid, 'SIGKILL');
      tryKill(m.pid, 'SIGKILL');
    }
  });
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      process.stderr.write(`\n${sig}: stopping the benchmark processes\n`);
      void stopAll().finally(() => process.exit(130));
    });
  }
}
