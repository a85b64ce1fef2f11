import { stateOf, type SidecarStatus } from '../observability/status.js';
import type { Made } from './made.js';

/**
 * The one status: every fact the sidecar reports about itself, from what the parts made. /readyz,
 * /healthz, /status, systemd's STATUS=, the warnings log and the status command all render this
 * value (observability/status.ts).
 */
export function sidecarStatus(made: Made, s: { draining: boolean; build: SidecarStatus['build']; wallNow: number }): SidecarStatus {
  const { service } = made;
  const token = service?.tokens.view();
  let verdict: { ready: boolean; reason?: string };
  const warnings: string[] = [];
  if (s.draining) verdict = { ready: false, reason: 'shutting down' };
  else if (!service || !token) verdict = { ready: false, reason: 'starting' };
  else {
    verdict = token.ready ? { ready: true } : { ready: false, reason: token.reason ?? 'not ready' };
    // A wrong token.attach is a warning, not unreadiness: a 401 may be one endpoint's own answer,
    // and taking the pod out of service would stop the requests that do work.
    warnings.push(...token.warnings);
    const stuck = service.credentials.stuckSeconds();
    if (stuck !== undefined) warnings.push(`a credential file re-read has been running for ${stuck} s (a hung file system?); the current credentials stay in use`);
  }
  // Liveness is the token loop's: it fails only when the loop is dead or stuck, never because the vendor is down.
  const live = token ? { live: token.live, ...(token.liveReason !== undefined ? { liveReason: token.liveReason } : {}) } : { live: true };
  return {
    state: stateOf(verdict, token), ...verdict, ...live, warnings, token, listeners: { ...made.listeners }, build: s.build, at: new Date(s.wallNow).toISOString(),
  };
}
