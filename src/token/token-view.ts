import type { FleetStatus, TokenStatus } from '../observability/status.js';
import type { RefreshFailure, SupersededRecord, TokenSnapshot } from './token-state.js';

/**
 * The read side of the token's state: everything the rest of the sidecar reads of it (/readyz,
 * /healthz, the token gauges, systemd's STATUS=, the warnings) and nothing that changes it. The
 * token manager implements it; a reader is given this view, not the manager.
 */
export interface TokenView {
  /** Readiness: ready while a usable token is held, else the reason clients are told. */
  status(): { ready: boolean; reason?: string };
  /** Liveness: false only when the token loop itself is dead or stuck. */
  liveness(): { live: boolean; reason?: string };
  /** Non-fatal conditions beside the verdict (a new array each call). */
  warnings(): string[];
  /** The token's part of the one status. */
  view(): TokenStatus;
}

/** What the view is computed from: the token state's record and the loop's and rules' readings. */
export interface TokenViewInput {
  readiness: { ready: boolean; reason?: string };
  liveness: { live: boolean; reason?: string };
  token: TokenSnapshot | undefined;
  failure: RefreshFailure | undefined;
  /** The failure in the words /readyz uses (failure-reasons.ts). */
  failureMessage: string | undefined;
  superseded: SupersededRecord | undefined;
  supersededWindowMs: number;
  suspect: { evidence: 'unauthorized' | 'answers'; path: string } | undefined;
  warnings: string[];
  /** Wall-clock ms of the next attempt; undefined when none is scheduled. */
  nextAttemptWall: number | undefined;
  /** Monotonic and wall-clock ms now. */
  now: number;
  wallNow: number;
  /** The fleet store's part (fleet-source.ts), when `fleet.store` is set. */
  fleet?: FleetStatus;
}

/**
 * The token's part of the one status (observability/status.ts): plain facts, times as ISO
 * strings, the token named by its fingerprint only. A superseded record older than its judging
 * window is history and left out.
 */
export function tokenStatus(i: TokenViewInput): TokenStatus {
  const t = i.token;
  const superseded = i.superseded && i.wallNow - i.superseded.lastAtWall < i.supersededWindowMs ? i.superseded : undefined;
  const warnings = [...i.warnings];
  if (i.fleet?.state === 'down') {
    warnings.push(`the fleet store (${i.fleet.store}) is unreachable since ${i.fleet.since}: the current token keeps serving; fleet.onStoreDown is ${i.fleet.onStoreDown}`);
  }
  if (superseded?.holds) {
    warnings.push(`tokens this process still holds are rejected long before they expire (${superseded.inWindow} in ${i.supersededWindowMs / 60_000} min, the last at ${iso(superseded.lastAtWall)}): another process probably obtains tokens with the same ApiKey`);
  }
  return {
    ready: i.readiness.ready,
    ...(i.readiness.reason !== undefined ? { reason: i.readiness.reason } : {}),
    live: i.liveness.live,
    ...(i.liveness.reason !== undefined ? { liveReason: i.liveness.reason } : {}),
    ...(t ? {
      fingerprint: t.fingerprint,
      generation: t.generation,
      obtainedAt: iso(t.obtainedAtWall),
      expiresAt: iso(t.obtainedAtWall + t.lifetimeSeconds * 1000),
    } : {}),
    ageSeconds: t ? round((i.now - t.obtainedAt) / 1000) : 0,
    expiresInSeconds: t ? round(Math.max(0, t.expiresAt - i.now) / 1000) : 0,
    ...(i.nextAttemptWall !== undefined ? { nextAttemptAt: iso(i.nextAttemptWall) } : {}),
    ...(i.failure ? {
      lastRefreshError: {
        cause: i.failure.cause,
        message: i.failureMessage ?? i.failure.cause,
        at: iso(i.failure.atWall), since: iso(i.failure.sinceWall), attempts: i.failure.count,
      },
    } : {}),
    ...(i.suspect ? { attachSuspect: i.suspect } : {}),
    ...(superseded ? {
      superseded: {
        lastAt: iso(superseded.lastAtWall), inWindow: superseded.inWindow, windowMinutes: i.supersededWindowMs / 60_000,
        total: superseded.total, likelyAnotherHolder: superseded.holds,
      },
    } : {}),
    warnings,
    ...(i.fleet ? { fleet: i.fleet } : {}),
  };
}

function iso(wallMs: number): string {
  return new Date(wallMs).toISOString();
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
