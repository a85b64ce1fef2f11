/**
 * The read side of the token's state: everything the rest of the sidecar reads of it (/readyz,
 * /healthz, the token gauges, systemd's STATUS=, the warnings) and nothing that changes it. The
 * token manager implements it; a reader is given this view, not the manager.
 */
export interface TokenGauges {
  ageSeconds: number;
  expiresInSeconds: number;
  valid: boolean;
  /** Wall-clock Unix seconds. */
  expiryTimestampSeconds: number;
  nextRefreshTimestampSeconds: number;
}

export interface TokenView {
  /** Readiness: ready while a usable token is held, else the reason clients are told. */
  status(): { ready: boolean; reason?: string };
  /** Liveness: false only when the token loop itself is dead or stuck. */
  liveness(): { live: boolean; reason?: string };
  /** Non-fatal conditions beside the verdict (a new array each call). */
  warnings(): string[];
  /** True while `token.attach` is suspect. */
  attachSuspect(): boolean;
  gauges(): TokenGauges;
}
