/**
 * The reused-connection race: the sidecar writes a request into a pooled keep-alive
 * connection at the moment the service closes it as idle. The request then fails before any
 * response byte, and the service never saw it. nginx hides this by retrying on the next
 * connection (`proxy_next_upstream error`); so does the sidecar, once, on a fresh connection,
 * when the body can be sent again (none, or fully copied for replay).
 */

import type { RetryReason } from '../observability/metrics.js';

/**
 * How long after the request was fully written a failure can still be the race: the service's
 * reset of a connection it had already closed comes back within a round trip. A later failure
 * may follow a request the service has processed (it read it, worked, then died), so a method
 * that is not idempotent is not sent again then; nginx never retries those at all.
 */
export const STALE_WINDOW_MS = 250;
/** Safe to send twice even if the service did process the first (RFC 9110 §9.2.2). */
const IDEMPOTENT: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

const STALE = Symbol('b2b-sidecar.stale-connection');
interface StaleFailure {
  reason: RetryReason;
  /** ms from the request being fully written to the failure; -1 when it failed while being written. */
  afterSentMs: number;
}
type Marked = { [STALE]?: StaleFailure };

const REASONS: Readonly<Record<string, RetryReason>> = {
  ECONNRESET: 'reset',
  EPIPE: 'broken_pipe',
  UND_ERR_SOCKET: 'closed', // undici: "other side closed"
  ERR_STREAM_PREMATURE_CLOSE: 'closed',
};

/**
 * Called by an engine for an exchange that failed on a connection that had already carried a
 * response, before any byte of an answer (an interim 1xx included: the service had the request).
 * Only the race's own failures qualify: a refused connection, a TLS failure, a timeout or a
 * client abort is not marked. Returns whether it was marked, so the engine learns only from those.
 */
export function markStaleConnectionFailure(err: unknown, afterSentMs: number): boolean {
  if (!err || typeof err !== 'object') return false;
  const code = (err as { code?: unknown }).code;
  const reason = typeof code === 'string' ? REASONS[code] : undefined;
  if (!reason) return false;
  (err as Marked)[STALE] = { reason, afterSentMs };
  return true;
}

/** Why a failed exchange may be sent once more on a fresh connection, or undefined. */
export function retryReason(err: unknown, method: string): RetryReason | undefined {
  const stale = staleMark(err);
  if (!stale) return undefined;
  if (stale.afterSentMs > STALE_WINDOW_MS && !IDEMPOTENT.has(method)) return undefined;
  return stale.reason;
}

/**
 * Why a request failed as the race does (marked above), whatever the time since it was sent, or
 * undefined. For a request that is safe to repeat even if the service did process it (gentoken:
 * the worst case is a second token issued), so the 250 ms window does not apply.
 */
export function staleConnectionReason(err: unknown): RetryReason | undefined {
  return staleMark(err)?.reason;
}

function staleMark(err: unknown): StaleFailure | undefined {
  return err && typeof err === 'object' ? (err as Marked)[STALE] : undefined;
}
