import type { Config } from '../config/schema.js';
import { adminBaseUrl, askAdmin, type AdminAnswer } from '../observability/admin-client.js';

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
  /**
   * Its last gentoken attempts failed (its status's `token.lastRefreshError`), though it may still
   * hold a valid token: what doctor's gentoken step reports instead of calling.
   */
  renewalFailing?: { cause: string; message: string; since: string; attempts: number; expiresAt?: string };
}

/** The whole exchange, connect to last byte: an admin address that drips its answer is no sidecar. */
export const ADMIN_ASK_TIMEOUT_MS = 2000;

/**
 * Whether a b2b-sidecar answers on `config.admin` (a sidecar on the admin address this config
 * names is the one this config runs: two sidecars cannot share it), and what it says: `/healthz`
 * with the sidecar's JSON (or its `403 forbidden` when `admin.allow` leaves this host out), then
 * `/readyz` (`/readyz?credential=<id>` and that set's renewals for one set of several). Nothing is
 * looked for when `admin.port` is 0 (the port is picked at start).
 */
export async function findRunningSidecar(config: Pick<Config, 'admin' | 'listen'>, timeoutMs = ADMIN_ASK_TIMEOUT_MS, credential?: string): Promise<RunningSidecar | undefined> {
  if (config.admin.port === 0) return undefined;
  const base = adminBaseUrl(config.admin);
  const healthz = await askAdmin(new URL('/healthz', base), timeoutMs);
  if (!isSidecarHealthz(healthz)) return undefined;
  const admin = base.origin;
  const proxy = config.listen.port === 0 ? undefined : adminBaseUrl(config.listen);
  const found = { admin, ...(proxy ? { proxy } : {}) };
  if (healthz.status === 403) return { ...found, ready: false, reason: 'its admin listener refuses this host (admin.allow)' };
  // One set of several: its own readiness and renewals, not the sidecar's verdict over all sets.
  const readyz = await askAdmin(new URL(credential === undefined ? '/readyz' : `/readyz?credential=${encodeURIComponent(credential)}`, base), timeoutMs);
  const failing = renewalFailing(await askAdmin(new URL('/status', base), timeoutMs), credential);
  const withFailure = failing ? { ...found, renewalFailing: failing } : found;
  if (readyz.status === 200) return { ...withFailure, ready: true };
  const message = typeof readyz.body?.message === 'string' ? readyz.body.message : undefined;
  return { ...withFailure, ready: false, reason: message ?? `/readyz ${readyz.failure ?? 'did not answer'}` };
}

/**
 * `token.lastRefreshError` of a `/status` answer (observability/status.ts), or that of the entry of
 * `credentials` with this id, read liberally.
 */
function renewalFailing(answer: AdminAnswer, credential: string | undefined): RunningSidecar['renewalFailing'] {
  const body = answer.status === 200 ? answer.body : undefined;
  const token = credential === undefined ? body?.token : setToken(body?.credentials, credential);
  if (typeof token !== 'object' || token === null) return undefined;
  const { lastRefreshError: e, expiresAt } = token as { lastRefreshError?: Record<string, unknown>; expiresAt?: unknown };
  if (typeof e !== 'object' || e === null) return undefined;
  const text = (v: unknown, or: string) => (typeof v === 'string' ? v : or);
  return {
    cause: text(e.cause, 'unknown'), message: text(e.message, text(e.cause, 'unknown')), since: text(e.since, 'unknown'),
    attempts: typeof e.attempts === 'number' ? e.attempts : 1, ...(typeof expiresAt === 'string' ? { expiresAt } : {}),
  };
}

function setToken(sets: unknown, id: string): unknown {
  if (!Array.isArray(sets)) return undefined;
  const entry: unknown = sets.find((c: unknown) => typeof c === 'object' && c !== null && (c as { id?: unknown }).id === id);
  return (entry as { token?: unknown } | undefined)?.token;
}

/** True when a b2b-sidecar admin listener answers `/healthz` at `host:port` (see {@link findRunningSidecar}). */
export async function answersAsSidecar(host: string, port: number, timeoutMs = ADMIN_ASK_TIMEOUT_MS): Promise<boolean> {
  return isSidecarHealthz(await askAdmin(new URL('/healthz', adminBaseUrl({ host, port })), timeoutMs));
}

/** The admin listener's own answers: `{"status":"ok"}`, `{"status":"not live",…}`, or 403 `{"message":"forbidden"}`. */
function isSidecarHealthz(answer: AdminAnswer): boolean {
  if (answer.status === undefined || !answer.body) return false;
  if (answer.status === 403) return answer.body.message === 'forbidden';
  return answer.body.status === 'ok' || answer.body.status === 'not live';
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
