import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Newest modification time of any file under `dir` (ms). */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) latest = Math.max(latest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return latest;
}

/**
 * Why the build at `cli` cannot stand for the sources under `src`, if it cannot: tests that spawn
 * the CLI run dist/, not src/, and after a change to src/ without `npm run build` they would test
 * the previous build and fail with a misleading message.
 */
export function staleBuild(cli = CLI, src = SRC): string | undefined {
  let built: number;
  try {
    built = statSync(cli).mtimeMs;
  } catch {
    return 'dist/cli.js does not exist: run npm run build first (npm test builds first)';
  }
  return newest(src) > built ? 'dist/ is older than src/: run npm run build (npm test builds first), or this test runs the previous build' : undefined;
}

let checked = false;
/** Fails fast (once per test file) when dist/ is missing or older than src/. */
export function assertBuildIsCurrent(): void {
  if (checked) return;
  checked = true;
  const problem = staleBuild();
  if (problem) throw new Error(problem);
}

export interface Spawned {
  child: ChildProcessWithoutNullStreams;
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout match of `pattern` (bounded). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited: Promise<number | null>;
}

/** Runs the built CLI (`node dist/cli.js`) exactly as users do; `node` is another runtime's binary if given. */
export function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}, node = process.execPath): Spawned {
  assertBuildIsCurrent();
  return spawnCommand(node, [CLI, ...args], env);
}

/** Runs `command` (a launcher, a script) as `spawnCli` runs the CLI: output collected, `waitFor`, `exited`. */
export function spawnCommand(command: string, args: string[], env: NodeJS.ProcessEnv = {}): Spawned {
  const child = spawn(command, args, { env: { PATH: process.env.PATH, ...env } });
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
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}, node = process.execPath): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const p = spawnCli(args, env, node);
  const code = await p.exited;
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}
