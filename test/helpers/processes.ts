import { spawn, spawnSync } from 'node:child_process';

/** True when `name` is an installed command (so a client stack can run). */
export function installed(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' }).status === 0;
}

/** The environment for client processes: no proxy from the environment may intercept loopback traffic. */
export function clientEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra, NO_PROXY: '*', no_proxy: '*' };
  for (const name of ['http_proxy', 'HTTP_PROXY', 'https_proxy', 'HTTPS_PROXY', 'all_proxy', 'ALL_PROXY']) delete env[name];
  return env;
}

export interface ProcessResult { code: number | null; stdout: string; stderr: string }

/** Runs a real process to completion (bounded by `timeoutMs`), feeding `input` on stdin. */
export function runProcess(command: string, args: string[], options: { input?: Buffer | string; env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: options.env ?? clientEnv(), cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 60_000);
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() });
    });
    child.stdin.on('error', () => undefined); // a client that does not read stdin
    child.stdin.end(options.input);
  });
}
