import { request } from 'node:http';
import type { Config } from '../config/schema.js';
import { clampDelay } from '../shared/clock.js';
import { connectHost, httpOrigin } from '../shared/local-address.js';

/** A b2b-sidecar answering on the admin address of the config doctor (or `token`) was given. */
export interface RunningSidecar {
  /** The admin listener, `http://127.0.0.1:9464`. */
  admin: string;
  /** `/readyz` answered 200: it holds a valid token. */
  ready: boolean;
  /** Why not, as `/readyz` says it (or why it could not be asked). */
  reason?: string;
  /** Its proxy listener, where a request gets the token it holds; absent when `listen.port` is 0. */
  proxy?: URL;
}

/** The most of an admin answer read: the JSON of /healthz and /readyz is a few hundred bytes. */
const MAX_BODY = 4096;
/** The whole exchange, connect to last byte: an admin address that drips its answer is no sidecar. */
export const ADMIN_ASK_TIMEOUT_MS = 2000;

/**
 * Whether a b2b-sidecar answers on `config.admin` (a sidecar on the admin address this config
 * names is the one this config runs: two sidecars cannot share it), and what it says: `/healthz`
 * with the sidecar's JSON (or its `403 forbidden` when `admin.allow` leaves this host out), then
 * `/readyz`. Nothing is looked for when `admin.port` is 0 (the port is picked at start).
 */
export async function findRunningSidecar(config: Pick<Config, 'admin' | 'listen'>, timeoutMs = ADMIN_ASK_TIMEOUT_MS): Promise<RunningSidecar | undefined> {
  if (config.admin.port === 0) return undefined;
  const host = connectHost(config.admin.host);
  const admin = httpOrigin(host, config.admin.port);
  const healthz = await askAdmin(host, config.admin.port, '/healthz', timeoutMs);
  if (!isSidecarHealthz(healthz)) return undefined;
  const proxy = config.listen.port === 0 ? undefined : new URL(httpOrigin(connectHost(config.listen.host), config.listen.port));
  const found = { admin, ...(proxy ? { proxy } : {}) };
  if (healthz?.status === 403) return { ...found, ready: false, reason: 'its admin listener refuses this host (admin.allow)' };
  const readyz = await askAdmin(host, config.admin.port, '/readyz', timeoutMs);
  if (readyz?.status === 200) return { ...found, ready: true };
  const message = readyz && typeof readyz.json?.message === 'string' ? readyz.json.message : undefined;
  return { ...found, ready: false, reason: message ?? (readyz ? `/readyz answered ${readyz.status}` : '/readyz did not answer') };
}

/** True when a b2b-sidecar admin listener answers `/healthz` at `host:port` (see {@link findRunningSidecar}). */
export async function answersAsSidecar(host: string, port: number, timeoutMs = ADMIN_ASK_TIMEOUT_MS): Promise<boolean> {
  return isSidecarHealthz(await askAdmin(connectHost(host), port, '/healthz', timeoutMs));
}

interface AdminAnswer { status: number; json?: Record<string, unknown> }

/** The admin listener's own answers: `{"status":"ok"}`, `{"status":"not live",…}`, or 403 `{"message":"forbidden"}`. */
function isSidecarHealthz(answer: AdminAnswer | undefined): boolean {
  if (!answer?.json) return false;
  if (answer.status === 403) return answer.json.message === 'forbidden';
  return answer.json.status === 'ok' || answer.json.status === 'not live';
}

/** One GET with an overall deadline and a bounded body; undefined when there is no complete answer. */
function askAdmin(host: string, port: number, path: string, timeoutMs: number): Promise<AdminAnswer | undefined> {
  return new Promise((resolve) => {
    const req = request({ host, port, path, method: 'GET', agent: false, headers: { accept: 'application/json' } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
        if (body.length > MAX_BODY) req.destroy();
      });
      res.on('end', () => {
        clearTimeout(timer);
        let json: Record<string, unknown> | undefined;
        try {
          const parsed: unknown = JSON.parse(body);
          if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) json = parsed as Record<string, unknown>;
        } catch {
          // not the sidecar's JSON
        }
        resolve({ status: res.statusCode ?? 0, ...(json ? { json } : {}) });
      });
      // Cut short (too long, the deadline): no answer. After 'end' this changes nothing.
      res.on('close', () => resolve(undefined));
      res.on('error', () => resolve(undefined));
    });
    const timer = setTimeout(() => req.destroy(), clampDelay(timeoutMs));
    req.on('error', () => {
      clearTimeout(timer);
      resolve(undefined);
    });
    req.end();
  });
}

/** Word characters of tokens in common formats: base64/base64url, hex, JWTs, UUIDs. */
const TOKEN_WORD = /[A-Za-z0-9._~+/=-]{20,}/g;

/**
 * Hides every word of an answer that could be a token: 20 or more token characters holding a
 * letter and a digit, or upper- and lower-case letters mixed as random text mixes them (a quarter
 * of each at least; a CamelCase name has far fewer capitals), except a path of short segments. Through the running sidecar doctor
 * does not know the token it holds, so it cannot scrub that token by value from an answer that
 * echoes it (debug builds and gateways do); this is the fallback.
 */
export function hideTokenLike(text: string): string {
  return text.replace(TOKEN_WORD, (word) => {
    const letters = word.replace(/[^A-Za-z]/g, '');
    const upper = letters.replace(/[^A-Z]/g, '').length / Math.max(letters.length, 1);
    const mixed = upper >= 0.25 && upper <= 0.75;
    if (!(/[0-9]/.test(word) && letters.length > 0) && !mixed) return word;
    if (word.startsWith('/') && word.split('/').every((segment) => segment.length < 16)) return word;
    return '[REDACTED]';
  });
}
