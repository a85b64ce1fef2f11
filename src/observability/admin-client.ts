import { request } from 'node:http';
import { printableDeep } from '../shared/printable.js';

/**
 * The one client of the admin listener (observability/admin.ts), for every command that reads
 * the running sidecar (`wait`, `healthcheck`, `status`). Each ask has an overall deadline, not an
 * inactivity timeout: an admin port that drips its answer a byte at a time, or sends a body
 * without end, fails the ask when the deadline passes instead of holding it for ever
 * (docs/traps.md). Bodies are read up to {@link MAX_ADMIN_BODY_BYTES}. A failure says why in
 * words a script can print: `timeout`, `refused: too many connections`, `refused: forbidden`,
 * `could not be reached (ECONNREFUSED)`, or the status with the listener's message.
 *
 * Whatever answers on the port may not be the sidecar: every string of an answer's body is made
 * printable here, once, before any command prints it (shared/printable.ts), and each command
 * checks the answer's shape ({@link isSidecarAnswer}) before believing it.
 */

/** The admin listener's answers are a few hundred bytes; anything past this is not one of them. */
export const MAX_ADMIN_BODY_BYTES = 16_384;

/** The message of the admin listener's per-source refusal (proxy/listener/listener.ts). */
const PER_SOURCE_REFUSAL = 'too many connections from this address';

export interface AdminAnswer {
  /** The HTTP status, when a complete answer arrived. */
  status?: number;
  /** The answer's JSON body, when it was one. */
  body?: { status?: unknown; message?: unknown; warnings?: unknown; readonly [key: string]: unknown };
  /** Why the ask failed, in words; absent on a 2xx answer. */
  failure?: string;
}

/** Where a command reaches the admin listener bound at `host:port` (a wildcard bind: loopback). */
export function adminBaseUrl(admin: { host: string; port: number }): URL {
  const host = connectHost(admin.host);
  return new URL(`http://${host.includes(':') ? `[${host}]` : host}:${admin.port}`);
}

/**
 * Where to connect for a bind address: a wildcard bind is reached on loopback (a container's
 * HEALTHCHECK runs in the same network namespace), anything else as configured.
 */
export function connectHost(bind: string): string {
  if (bind === '0.0.0.0' || bind === '') return '127.0.0.1';
  if (bind === '::' || bind === '[::]') return '::1';
  return bind.replace(/^\[(.*)\]$/, '$1');
}

/** One `GET url`, complete (head and body) within `deadlineMs` or failed as `timeout`. */
export function askAdmin(url: URL, deadlineMs: number, maxBodyBytes = MAX_ADMIN_BODY_BYTES): Promise<AdminAnswer> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (answer: AdminAnswer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(answer);
    };
    const req = request(url, { method: 'GET', agent: false, headers: { connection: 'close' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBodyBytes) return finish({ status: res.statusCode, failure: `answer larger than ${maxBodyBytes} bytes (not the admin listener?)` });
        chunks.push(chunk);
      });
      res.on('end', () => finish(judge(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'))));
      res.on('error', () => undefined); // 'aborted' after finish() destroyed it
    });
    const timer = setTimeout(() => finish({ failure: 'timeout' }), deadlineMs);
    req.on('error', (err: NodeJS.ErrnoException) => finish({ failure: `could not be reached (${err.code ?? err.message})` }));
    req.end();
  });
}

/** The answer's meaning: 2xx is success; a refusal by the listener is named as one. */
function judge(status: number, text: string): AdminAnswer {
  let body: AdminAnswer['body'];
  try {
    const parsed = JSON.parse(text) as unknown;
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = printableDeep(parsed) as AdminAnswer['body'];
  } catch {
    // not JSON: the status alone
  }
  const message = typeof body?.message === 'string' ? body.message : undefined;
  if (status >= 200 && status < 300) return { status, ...(body ? { body } : {}) };
  let failure: string;
  if (status === 503 && message === PER_SOURCE_REFUSAL) failure = `refused: too many connections (answered 503 "${PER_SOURCE_REFUSAL}")`;
  else if (status === 403) failure = 'refused: forbidden (answered 403: admin.allow does not admit this address)';
  else failure = `answered ${status}${message ? ` "${message}"` : ''}`;
  return { status, ...(body ? { body } : {}), failure };
}

/** What an answer that is not the sidecar's is reported as (exit 3 for `status`). */
export const NOT_SIDECAR = 'answered something that is not the b2b-sidecar admin listener\'s';

/**
 * True when a 200 answer of `path` has the shape the sidecar's admin listener gives it
 * (observability/admin.ts): `/healthz` `{"status":"ok"}`, `/readyz` `{"status":"ready"}`; `/status`
 * is judged by the status command, which also needs the build. Anything else answering 200 on the
 * port (another program, a proxy's error page) is not a verdict.
 */
export function isSidecarAnswer(path: '/healthz' | '/readyz', answer: AdminAnswer): boolean {
  return answer.body?.status === (path === '/healthz' ? 'ok' : 'ready');
}
