import type { Logger } from '../../observability/logger.js';

/** How a full listener is reported (docs/traps.md T52): who it is, what to raise, and the clock. */
export interface FullListenerReport {
  /** The listener's name in the log line: `proxy`, `socket`, `admin`. */
  readonly listener: string;
  /** What an operator can do about it, e.g. `raise proxy.maxConnections`. */
  readonly remedy: string;
  /** Milliseconds, for the once-a-minute log; Date.now when not given. */
  readonly now?: () => number;
}

/** A full listener is logged at most this often; the line counts the refusals since the last one. */
export const FULL_LISTENER_LOG_INTERVAL_MS = 60_000;

/**
 * Called for each connection Node dropped because the listener holds its `maxConnections`: logs
 * the first at once and then at most once a minute, with how many were refused meanwhile.
 */
export function fullListenerLogger(logger: Logger, limit: number, report: FullListenerReport): () => void {
  const now = report.now ?? Date.now;
  let lastLogged = -Infinity;
  let unlogged = 0;
  return () => {
    unlogged++;
    const at = now();
    if (at - lastLogged < FULL_LISTENER_LOG_INTERVAL_MS) return;
    logger.warn('connections refused: the listener is full', { listener: report.listener, limit, refused: unlogged, remedy: report.remedy });
    lastLogged = at;
    unlogged = 0;
  };
}
