import { stateOf, type SidecarStatus, type TokenStatus } from '../observability/status.js';
import type { Made } from './made.js';

/** What the one status reads besides the parts: the configured sets and what readiness requires of them. */
export interface StatusFacts {
  draining: boolean;
  build: SidecarStatus['build'];
  wallNow: number;
  /** The credential sets' ids, in config order (listed while starting too). */
  credentialIds?: readonly string[];
  /** `readiness.credentials`: every set must hold a valid token (all, the default) or at least one (any). */
  readiness?: 'all' | 'any';
}

/**
 * The one status: every fact the sidecar reports about itself, from what the parts made. /readyz,
 * /healthz, /status, systemd's STATUS=, the warnings log and the status command all render this
 * value (observability/status.ts). With several credential sets, each set's token is in
 * `credentials`; `token` stays the first set's, and the verdict follows `readiness.credentials`
 * (docs/credential-sets.md).
 */
export function sidecarStatus(made: Made, s: StatusFacts): SidecarStatus {
  const { service } = made;
  const sets = service?.sets ?? [];
  const credentials: SidecarStatus['credentials'] = service
    ? sets.map((set) => ({ id: set.id, token: set.tokens.view() }))
    : (s.credentialIds ?? ['default']).map((id) => ({ id, token: undefined }));
  const token = credentials[0]?.token;
  const several = credentials.length > 1;
  let verdict: { ready: boolean; reason?: string };
  const warnings: string[] = [];
  if (s.draining) verdict = { ready: false, reason: 'shutting down' };
  else if (!service || !token) verdict = { ready: false, reason: 'starting' };
  else {
    verdict = several ? setsVerdict(credentials, s.readiness ?? 'all') : token.ready ? { ready: true } : { ready: false, reason: token.reason ?? 'not ready' };
    sets.forEach((set, i) => {
      const t = credentials[i]!.token!;
      // Which set a warning is about, when there are several.
      const tag = (w: string) => (several ? `credential set ${set.id}: ${w}` : w);
      // A wrong token.attach is a warning, not unreadiness: a 401 may be one endpoint's own answer,
      // and taking the pod out of service would stop the requests that do work.
      warnings.push(...t.warnings.map(tag));
      // Under readiness.credentials any, a set without a token is a warning: its requests get 503.
      if (several && !t.ready && verdict.ready) warnings.push(tag(`no valid token: ${t.reason ?? 'not ready'}`));
      const stuck = set.credentials.stuckSeconds();
      if (stuck !== undefined) warnings.push(tag(`a credential file re-read has been running for ${stuck} s (a hung file system?); the current credentials stay in use`));
    });
  }
  // Liveness is the token loops': it fails only when a loop is dead or stuck, never because the vendor is down.
  const dead = credentials.find((c) => c.token && !c.token.live);
  const live = !service || !token ? { live: true }
    : dead ? { live: false, liveReason: several ? `credential set ${dead.id}: ${dead.token!.liveReason ?? 'not live'}` : dead.token!.liveReason ?? 'not live' }
      : { live: true };
  const liveView = live.live ? { live: true } : live;
  return {
    state: stateOf(verdict, token), ...verdict, ...liveView, warnings, token, credentials, listeners: { ...made.listeners }, build: s.build, at: new Date(s.wallNow).toISOString(),
  };
}

/** The verdict over several sets: `all` needs every set's token, `any` one; the reason names the sets without. */
function setsVerdict(credentials: SidecarStatus['credentials'], mode: 'all' | 'any'): { ready: boolean; reason?: string } {
  const down = credentials.filter((c) => !c.token?.ready) as Array<{ id: string; token: TokenStatus }>;
  if (down.length === 0 || (mode === 'any' && down.length < credentials.length)) return { ready: true };
  const first = down[0]!;
  const more = down.length > 1 ? ` (and ${down.length - 1} more: ${down.slice(1, 6).map((c) => c.id).join(', ')}${down.length > 6 ? ', ...' : ''})` : '';
  return { ready: false, reason: `credential set ${first.id}: ${first.token.reason ?? 'not ready'}${more}` };
}

/**
 * `/readyz?credential=<id>`: one set's readiness; undefined when no set has that id. While the
 * sidecar starts or drains, that verdict applies to every set.
 */
export function setReadiness(status: SidecarStatus, id: string): { ready: boolean; reason?: string; warnings?: string[] } | undefined {
  const entry = status.credentials.find((c) => c.id === id);
  if (!entry) return undefined;
  if (status.reason === 'shutting down' || status.reason === 'starting' || !entry.token) return { ready: false, reason: status.reason ?? 'starting' };
  const t = entry.token;
  const base = t.ready ? { ready: true } : { ready: false, reason: t.reason ?? 'not ready' };
  return t.warnings.length ? { ...base, warnings: t.warnings } : base;
}
