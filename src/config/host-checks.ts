import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { formatProblem, isRecord, type ConfigPath } from './walk.js';

/** A resolver that hangs (no DNS server answering) must not hang check-config or start-up. */
const LOOKUP_TIMEOUT_MS = 5000;
const LISTENER_HOSTS: ConfigPath[] = [['listen', 'host'], ['admin', 'host']];

/**
 * Listener addresses given as names must resolve, or the bind fails after the credentials were
 * read and a token requested. A DNS lookup is what `listen()` does itself; nothing is bound
 * here. IP literals and malformed values (reported by validation) are skipped.
 *
 * @returns problem lines in the config format, naming the key.
 */
export async function hostProblems(data: unknown, resolve: (host: string) => Promise<unknown> = lookupOnce): Promise<string[]> {
  const checks = LISTENER_HOSTS.map(async (path) => {
    const section = isRecord(data) ? data[path[0]!] : undefined;
    const host = isRecord(section) ? section[path[1]!] : undefined;
    if (typeof host !== 'string' || isIP(host) !== 0 || !/^[A-Za-z0-9_.-]+$/.test(host)) return undefined;
    try {
      await resolve(host);
      return undefined;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      return formatProblem(path, `${host} does not resolve (${code}); use an IP address such as 127.0.0.1, or a name this host can resolve`);
    }
  });
  return (await Promise.all(checks)).filter((p): p is string => p !== undefined);
}

async function lookupOnce(host: string): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error('DNS lookup timed out'), { code: 'ETIMEOUT' })), LOOKUP_TIMEOUT_MS);
    timer.unref();
  });
  try {
    return await Promise.race([lookup(host), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
