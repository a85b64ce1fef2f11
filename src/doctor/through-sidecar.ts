import type { Config } from '../config/schema.js';
import { MAX_SECRET_FILE_BYTES, readBoundedFileSync } from '../shared/bounded-file.js';
import type { SecretSet } from '../shared/secrets.js';
import { gentokenUrl } from '../token/token-client.js';
import type { ProxyEngine } from '../upstream/engine.js';
import { confirmConfigured } from './attach-discovery.js';
import type { DoctorStep } from './doctor-report.js';
import { checkProbe, type ProbeTarget } from './probe-check.js';
import { hideTokenLike, type RunningSidecar } from './running-sidecar.js';
import type { SetReach, SetUnreachable } from './set-reach.js';

/** What {@link throughRunningSidecar} needs from the doctor command. */
export interface ThroughSidecarOptions {
  /** `--probe`, if given. */
  probe: string | undefined;
  /** `--discover-attach` or `--try` asked for. */
  discovering: boolean;
  /** `--try` guesses given. */
  guessing: boolean;
  /** The report, pushed onto. */
  steps: DoctorStep[];
  secrets: SecretSet;
  /** The probe path straight to the service, without a token (the tokenless check of discovery). */
  direct: ProbeTarget;
  /** An engine to the sidecar's proxy listener (plain HTTP, as an app sends). */
  engineTo: (listener: URL) => ProxyEngine;
  /** How a request reaches the credential set diagnosed (doctor/set-reach.ts). */
  reach: SetReach | SetUnreachable;
}

/**
 * The gentoken, probe and discover-attach steps beside a running sidecar with this config: no
 * token of doctor's own; the probe goes through the sidecar's listener with the token it holds.
 * Discovery's tokenless check still runs; trying presentations needs `--own-token`.
 */
export async function throughRunningSidecar(config: Config, running: RunningSidecar, o: ThroughSidecarOptions): Promise<void> {
  const { steps, secrets, direct, discovering } = o;
  const own = 'at a vendor that keeps one token per ApiKey, a token of doctor\'s own would revoke the one the sidecar holds; --own-token obtains one anyway';
  const url = gentokenUrl({ baseUrl: config.service.baseUrl });
  if (!running.ready) {
    steps.push({
      step: 'gentoken', ok: false, url,
      detail: `not called: a b2b-sidecar with this config answers on ${running.admin}, but holds no valid token: ${running.reason ?? 'not ready'}`,
      hint: `its log says why (journalctl -u b2b-sidecar, or the container's log); ${own}`,
    });
    return;
  }
  const failing = running.renewalFailing;
  if (failing) {
    // It still serves, but its renewals fail: the token it holds runs out (the runbook's "token
    // expiring soon"); a green step here would send the operator the wrong way.
    steps.push({
      step: 'gentoken', ok: false, url,
      detail: `not called: a b2b-sidecar with this config answers on ${running.admin} and still holds a valid token${failing.expiresAt ? ` (until ${failing.expiresAt})` : ''}, but its renewals are failing: ${failing.attempts} attempt${failing.attempts === 1 ? '' : 's'} since ${failing.since}, the last: ${failing.message}`,
      hint: `fix what the error names before the token runs out (docs/troubleshooting.md lists each); its log says more (journalctl -u b2b-sidecar, or the container's log); ${own}`,
    });
  } else {
    steps.push({ step: 'gentoken', ok: true, url, detail: `not called: a b2b-sidecar with this config answers on ${running.admin} and holds a valid token (/readyz 200); doctor probes through it instead (${own})` });
  }
  if (o.probe === undefined) return;
  const { reach } = o;
  if ('unreachable' in reach) {
    steps.push({ step: 'probe', ok: false, detail: `cannot probe through the running sidecar: ${reach.unreachable}`, hint: reach.hint });
    return;
  }
  const readTokenFile = config.token.file;
  if (readTokenFile) {
    // The token it holds, if this user may read it: then an echo of it is scrubbed by value. Read
    // bounded and without blocking, like every file an operator names (docs/traps.md T35).
    try {
      secrets.addToken(readBoundedFileSync(readTokenFile, MAX_SECRET_FILE_BYTES).trim());
    } catch {
      // unreadable here (another user): the pattern below still applies
    }
  }
  const engine = o.engineTo(reach.listener);
  try {
    // The sidecar scrubs the token it attached (proxy/diagnostic-answer.ts); doctor scrubs its
    // own secrets and, last, anything that still looks like a token.
    const through: ProbeTarget = { ...direct, engine, viaSidecar: true, choose: { prefix: reach.prefix, headers: reach.headers }, redact: (text) => hideTokenLike(secrets.redactFragments(text)) };
    const { answer: _answer, ...probe } = await checkProbe(through, [], discovering, `through the running sidecar (${reach.how}, the token it holds and the token.attach it started with)`);
    steps.push(probe);
    if (!discovering || probe.status === undefined) return;
    if (probe.ok && !o.guessing) {
      steps.push(await confirmConfigured(direct));
      return;
    }
    steps.push({
      step: 'discover-attach', ok: false, url: `${direct.base}${direct.path}`, result: 'needs-own-token', accepted: [],
      detail: 'not run: trying presentations needs a token of doctor\'s own (the one the running sidecar holds cannot be placed elsewhere) (0 requests)',
      hint: `run the same doctor command with --own-token (${own.split(';')[0]}; it renews at its next 401)`,
    });
  } finally {
    await engine.close();
  }
}
