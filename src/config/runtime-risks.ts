/**
 * Settings of the Node.js runtime itself that would hand the credentials out, judged from the
 * environment and node's own options (docs/security.md, "The process"):
 * - the inspector (`--inspect*` in NODE_OPTIONS or on node's command line) lets anyone who can
 *   reach its port read the password and run code as the sidecar: `run` refuses it unless
 *   `B2B_ALLOW_INSPECTOR=true` (a development machine);
 * - `NODE_DEBUG` naming a module that prints request headers (http, http2, net, tls, undici,
 *   fetch) puts the ApiKey and the token on stderr: a warning at start;
 * - `DEBUG` naming ioredis (the Redis fleet store's client, through the `debug` package) prints
 *   every Redis command with its arguments, the Redis password and the shared token among them, on
 *   stderr (docs/traps.md T86): a warning at start.
 */

/** The environment variable that lets `run` start with the inspector on. */
export const ALLOW_INSPECTOR_ENV = 'B2B_ALLOW_INSPECTOR';

/** Node's options that open the inspector at start (`--inspect-port` alone only picks its port; SIGUSR1 is closed by the entry, entry/early-signals.ts). */
const INSPECTOR_OPTION = /^--inspect(-brk|-wait)?(=|$)/;
/** NODE_DEBUG sections whose output carries request or response headers. */
const HEADER_PRINTING = new Set(['http', 'http2', 'net', 'tls', 'undici', 'fetch', 'https']);

/** The inspector options among node's own and NODE_OPTIONS, as written. */
function inspectorOptions(env: NodeJS.ProcessEnv, execArgv: readonly string[]): string[] {
  const fromEnv = (env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);
  return [...execArgv, ...fromEnv].filter((option) => INSPECTOR_OPTION.test(option));
}

/** Why `run` must not start with these runtime settings, or undefined. */
export function inspectorRefusal(env: NodeJS.ProcessEnv, execArgv: readonly string[]): string | undefined {
  const options = inspectorOptions(env, execArgv);
  if (options.length === 0 || inspectorAllowed(env)) return undefined;
  return `Node's inspector is enabled (${options.join(' ')}): anyone who can reach its port can read the credentials and run code as the sidecar. Remove it from NODE_OPTIONS or node's command line (on a development machine, ${ALLOW_INSPECTOR_ENV}=true starts anyway)`;
}

/** Warnings about runtime settings that leak credentials without stopping the sidecar. */
export function runtimeWarnings(env: NodeJS.ProcessEnv, execArgv: readonly string[]): string[] {
  const out: string[] = [];
  const sections = (env.NODE_DEBUG ?? '').split(/[\s,]+/).map((s) => s.toLowerCase()).filter(Boolean);
  const printing = sections.filter((s) => HEADER_PRINTING.has(s) || s === '*');
  if (printing.length > 0) {
    out.push(`NODE_DEBUG=${env.NODE_DEBUG} makes Node print request headers, the ApiKey and the token among them, on stderr (${printing.join(', ')}): unset it; log.level: debug shows what the sidecar does without secrets`);
  }
  // The debug package's rule: a `-pattern` turns off what it matches, whatever else turns it on.
  const patterns = (env.DEBUG ?? '').split(/[\s,]+/).filter(Boolean);
  const redisDebug = patterns.filter((p) => !p.startsWith('-') && debugPatternMatches(p, 'ioredis:redis'));
  if (redisDebug.length > 0 && !patterns.some((p) => p.startsWith('-') && debugPatternMatches(p.slice(1), 'ioredis:redis'))) {
    out.push(`DEBUG=${env.DEBUG} makes the Redis client of the fleet store print every command with its arguments, the Redis password and the shared token among them, on stderr (${redisDebug.join(', ')}): unset it`);
  }
  const options = inspectorOptions(env, execArgv);
  if (options.length > 0 && inspectorAllowed(env)) out.push(`Node's inspector is enabled (${options.join(' ')}) and ${ALLOW_INSPECTOR_ENV}=true: anyone who can reach its port can read the credentials`);
  return out;
}

function inspectorAllowed(env: NodeJS.ProcessEnv): boolean {
  return /^(true|1|yes)$/i.test(env[ALLOW_INSPECTOR_ENV] ?? '');
}

/** Whether a `debug` package pattern (`*` any run of characters) enables `namespace`. */
function debugPatternMatches(pattern: string, namespace: string): boolean {
  const regex = new RegExp(`^${pattern.split('*').map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`);
  return regex.test(namespace);
}
