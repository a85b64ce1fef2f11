import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface Spawned {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout match of `pattern` (bounded). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/** Runs the built CLI (`node dist/cli.js`) exactly as users do. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}): Spawned {
  const child = spawn(process.execPath, [CLI, ...args], { env: { PATH: process.env.PATH, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    waitFor(pattern, timeoutMs = 15000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern);
          if (m) {
            clearInterval(timer);
            clearTimeout(limit);
            resolve(m);
          }
        };
        const timer = setInterval(check, 20);
        const limit = setTimeout(() => {
          clearInterval(timer);
          reject(new Error(`timed out waiting for ${pattern}; stdout: ${out}; stderr: ${err}`));
        }, timeoutMs);
        check();
      });
    },
  };
}

/** Runs the CLI to completion. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnCli(args, env);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}
