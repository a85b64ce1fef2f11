/**
 * The reused-connection race (issue 16): the sidecar writes a request into a pooled keep-alive
 * connection at the moment the service closes it as idle. The request then fails before any
 * response byte, and the service never saw it. nginx hides this by retrying on the next
 * connection (`proxy_next_upstream error`); so does the sidecar, once, on a fresh connection,
 * when the body can be sent again (none, or fully copied for replay).
 */

/** Label values of `b2b_sidecar_upstream_retries_total{reason}`. */
export type RetryReason = 'reset' | 'broken_pipe' | 'closed';

const STALE = Symbol('b2b-sidecar.stale-connection');
type Marked = { [STALE]?: RetryReason };

const REASONS: Readonly<Record<string, RetryReason>> = {
  ECONNRESET: 'reset',
  EPIPE: 'broken_pipe',
  UND_ERR_SOCKET: 'closed', // undici: "other side closed"
  ERR_STREAM_PREMATURE_CLOSE: 'closed',
};

/**
 * Called by an engine for an exchange that failed before any response byte on a connection that
 * had already carried a response. Only the race's own failures qualify: a refused connection,
 * a TLS failure or a timeout is not retried.
 */
export function markStaleConnectionFailure(err: unknown): void {
  if (!err || typeof err !== 'object') return;
  const code = (err as { code?: unknown }).code;
  const reason = typeof code === 'string' ? REASONS[code] : undefined;
  if (reason) (err as Marked)[STALE] = reason;
}

/** Why a failed exchange may be sent once more on a fresh connection, or undefined. */
export function retryReason(err: unknown): RetryReason | undefined {
  return err && typeof err === 'object' ? (err as Marked)[STALE] : undefined;
}
