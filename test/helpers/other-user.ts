import { spawn } from 'node:child_process';
import { accessSync, chmodSync, constants, copyFileSync, cpSync, linkSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { assertBuildIsCurrent, CLI } from './cli.js';

/**
 * Runs the built CLI as a user who cannot read what the test's own user made private. As root (CI,
 * containers) setpriv drops to `nobody`; the node binary and dist/ are first placed in a directory
 * `nobody` can enter (with ajv, which the validator bundled in dist/ requires), since the checkout and the pinned node (~/.cache) may sit under a 0700 home.
 * As any other user the caller's files are made unreadable by mode 000 instead (an owner without
 * read permission cannot read either), so the test means the same everywhere.
 */
export interface OtherUser {
  /** Makes `file` unreadable to the user the CLI runs as (mode 0600 as root, 000 otherwise). */
  hide(file: string): void;
  run(args: string[], env?: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Removes the copies. */
  dispose(): void;
}

export function otherUser(): OtherUser {
  assertBuildIsCurrent();
  const root = process.getuid?.() === 0;
  if (!root) {
    return {
      hide: (file) => chmodSync(file, 0o000),
      run: (args, env) => runFile(process.execPath, [CLI, ...args], env),
      dispose: () => undefined,
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'b2b-other-user-'));
  chmodSync(dir, 0o755);
  const node = join(dir, 'node');
  try {
    linkSync(process.execPath, node); // same file system: no 100 MB copy
  } catch {
    copyFileSync(process.execPath, node);
  }
  accessSync(node, constants.X_OK);
  const dist = join(dir, 'dist');
  cpSync(dirname(CLI), dist, { recursive: true });
  // The bundle's one run-time requirement outside node: ajv's standalone-validator helpers.
  cpSync(join(dirname(CLI), '..', 'node_modules', 'ajv'), join(dir, 'node_modules', 'ajv'), { recursive: true });
  return {
    hide: (file) => chmodSync(file, 0o600),
    run: (args, env) => runFile('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', node, join(dist, 'cli.js'), ...args], env),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}

function runFile(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(file, args, { env: { PATH: process.env.PATH, ...env }, cwd: tmpdir() });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}
