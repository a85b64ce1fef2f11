/**
 * The one status: every fact the running sidecar reports about itself, computed in one place
 * (sidecar.ts `status()`), and the renderings of it: `/readyz` and `/healthz` (readiness(),
 * liveness()), `GET /status` (the value itself, as JSON), systemd's `STATUS=` (statusLine()) and
 * the `status` command's text (statusText()). Times are ISO 8601 (UTC) strings so the JSON reads
 * the same in a terminal and in a script.
 */

/** The one-word verdict, most serious first: what `status` prints on its first line. */
export type StatusState =
  | 'starting'
  | 'shutting down'
  /** No usable token: requests are answered 503 (`reason` says why). */
  | 'no token'
  /** A token is held and serves, but the last gentoken attempt failed (`token.lastRefreshError`). */
  | 'refresh failing'
  /** Requests are refused on several paths and none succeeds: token.attach is probably wrong. */
  | 'attach suspect'
  /** Tokens are rejected young, again and again: another process probably holds the same ApiKey. */
  | 'superseded'
  | 'ready';

/** The token's part of the status (token/token-view.ts computes it). */
export interface TokenStatus {
  ready: boolean;
  /** Why requests get 503 now; absent while ready. */
  reason?: string;
  live: boolean;
  /** Why the token loop is dead or stuck; absent while live. */
  liveReason?: string;
  /** The token held (usable or not): its fingerprint, never the value. */
  fingerprint?: string;
  generation?: number;
  obtainedAt?: string;
  expiresAt?: string;
  ageSeconds: number;
  expiresInSeconds: number;
  /** The next gentoken attempt (now while one is on the wire). */
  nextAttemptAt?: string;
  /** The last failed gentoken attempt, until one succeeds. */
  lastRefreshError?: { cause: string; message: string; at: string; since: string; attempts: number };
  attachSuspect?: { evidence: 'unauthorized' | 'answers'; path: string };
  /** The latest young token rejected where the renewal helped, within the judging window. */
  superseded?: { lastAt: string; inWindow: number; windowMinutes: number; total: number; likelyAnotherHolder: boolean };
  /** Conditions an operator should see that do not make the sidecar unready. */
  warnings: string[];
  /** The fleet store the token is shared through (`fleet.store`); absent with `none`. */
  fleet?: FleetStatus;
}

/** The token's fleet store (docs/fleet.md): no secret, the token named by the record's version only. */
export interface FleetStatus {
  store: 'sqlite' | 'redis' | 'kubernetes';
  /** The credential set's id (the metrics' `credential` label). */
  credential: string;
  /** `unknown` until the first operation answers. */
  state: 'up' | 'down' | 'unknown';
  /** When the state last changed (ISO). */
  since: string;
  /** Where the token in use came from: the store (`shared`), this process alone while the store was down (`local`), none yet. */
  source: 'shared' | 'local' | 'none';
  onStoreDown: 'local' | 'wait';
  /** The record of the token in use: its version, who minted it and when, its age in seconds. */
  version?: number;
  mintedBy?: string;
  mintedAt?: string;
  ageSeconds?: number;
  lifetimeSeconds?: number;
  /** The store's last failure, its secret-free words. */
  lastError?: { operation: string; message: string; at: string };
}

export interface SidecarStatus {
  state: StatusState;
  ready: boolean;
  /** Why not ready; absent while ready. */
  reason?: string;
  live: boolean;
  liveReason?: string;
  warnings: string[];
  /** The first (with the object form of `credentials`, the only) set's token: what every rendering before credential sets showed. */
  token: TokenStatus | undefined;
  /** Every credential set, in config order: its id and its token's status (undefined while starting). */
  credentials: Array<{ id: string; token: TokenStatus | undefined }>;
  listeners: { proxy?: string; admin?: string; socket?: string; sets?: Record<string, string> };
  build: { version: string; node: string };
  at: string;
}

/** The verdict of a status: not ready first, then the warnings in order of what to look at first. */
export function stateOf(s: Pick<SidecarStatus, 'ready' | 'reason'>, token: TokenStatus | undefined): StatusState {
  if (!s.ready) {
    if (s.reason === 'shutting down') return 'shutting down';
    if (s.reason === 'starting') return 'starting';
    return 'no token';
  }
  if (token?.lastRefreshError) return 'refresh failing';
  if (token?.attachSuspect) return 'attach suspect';
  if (token?.superseded?.likelyAnotherHolder) return 'superseded';
  return 'ready';
}

/** `/readyz`: the verdict, its reason and the warnings (no `warnings` key when there are none). */
export function readiness(s: SidecarStatus): { ready: boolean; reason?: string; warnings?: string[] } {
  const base = s.ready ? { ready: true } : { ready: false, reason: s.reason ?? 'not ready' };
  return s.warnings.length ? { ...base, warnings: s.warnings } : base;
}

/** `/healthz` and the systemd watchdog: the token loop's liveness. */
export function liveness(s: Pick<SidecarStatus, 'live' | 'liveReason'>): { live: boolean; reason?: string } {
  return s.live ? { live: true } : { live: false, reason: s.liveReason ?? 'not live' };
}

/** systemd's `STATUS=` line. */
export function statusLine(h: { ready: boolean; reason?: string; warnings?: readonly string[] }): string {
  return h.ready
    ? `ready${h.warnings?.length ? ` (warning: ${h.warnings.join('; ')})` : ''}`
    : `not ready: ${h.reason ?? 'unknown'}`;
}

/** The `status` command's human text: the verdict first, then one fact a line, labels aligned. */
export function statusText(s: SidecarStatus): string {
  const lines = [`${s.state}${s.ready ? '' : `: ${s.reason ?? 'not ready'}`}`];
  // Labels aligned; a set's indented label that fills the column still gets its space.
  const line = (label: string, value: string) => lines.push(`${`${label}:`.length >= 15 ? `${label}: ` : `${label}:`.padEnd(15)}${value}`);
  // Several credential sets: one block per set (docs/credential-sets.md), then the sidecar's own facts.
  const sets = s.credentials ?? [];
  if (sets.length > 1) {
    for (const c of sets) {
      lines.push(`credential set ${c.id}: ${c.token === undefined ? 'starting' : c.token.ready ? 'ready' : `no token: ${c.token.reason ?? 'not ready'}`}`);
      tokenLines(c.token, (label, value) => line(`  ${label}`, value));
    }
  } else {
    tokenLines(s.token, line);
  }
  for (const w of s.warnings) line('warning', w);
  if (!s.live) line('not live', s.liveReason ?? 'unknown');
  const l = s.listeners;
  line('listeners', `proxy ${l.proxy ?? '-'}, admin ${l.admin ?? '-'}${l.socket ? `, socket ${l.socket}` : ''}${l.sets ? Object.entries(l.sets).map(([id, at]) => `, ${id} ${at}`).join('') : ''}`);
  line('build', `b2b-sidecar ${s.build.version}, node ${s.build.node}`);
  return `${lines.join('\n')}\n`;
}

/** One token's lines of the status text: fingerprint, age and expiry, next attempt, refresh error, superseded. */
function tokenLines(t: TokenStatus | undefined, line: (label: string, value: string) => void): void {
  line('token', t?.fingerprint
    ? `${t.fingerprint} (generation ${t.generation}), age ${t.ageSeconds} s, expires in ${t.expiresInSeconds} s (${t.expiresAt})`
    : 'none');
  if (t?.nextAttemptAt) line('next attempt', t.nextAttemptAt);
  if (t?.lastRefreshError) {
    const e = t.lastRefreshError;
    line('refresh error', `${e.cause}: ${e.message} (at ${e.at}; ${e.attempts} failed attempt${e.attempts === 1 ? '' : 's'} since ${e.since})`);
  }
  if (t?.superseded) {
    const x = t.superseded;
    line('superseded', `last at ${x.lastAt}, ${x.inWindow} in ${x.windowMinutes} min${x.likelyAnotherHolder ? ': another process probably obtains tokens with the same ApiKey' : ''}`);
  }
  if (t?.fleet) line('fleet', fleetText(t.fleet));
}

/** The fleet line of `status`: the store and its state, where the token came from, the record. */
function fleetText(f: FleetStatus): string {
  const record = f.version !== undefined ? `, record version ${f.version} minted by ${f.mintedBy ?? 'unknown'} ${f.ageSeconds ?? 0} s ago` : ', no record yet';
  const error = f.state === 'down' && f.lastError ? ` (${f.lastError.operation}: ${f.lastError.message})` : '';
  return `${f.store} ${f.state} since ${f.since}${error}, token ${f.source}${record}, onStoreDown ${f.onStoreDown}`;
}
