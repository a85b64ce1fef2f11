import type { DoctorStep } from './doctor-report.js';
import type { ProbeAnswer } from './probe-check.js';

/** Why discovery must stop at once: `rate-limited` (429, or any Retry-After) or `locked` (423). */
export type Halt = 'rate-limited' | 'locked';

/**
 * A 423 (the key or the resource is locked) or a 429, or a refusal with `Retry-After` (a 503
 * asking to come back later): one more request may extend a lock or count against the key. A 2xx
 * carrying the header was served, so it does not stop discovery.
 */
export function haltOf(answer: Pick<ProbeAnswer, 'status' | 'retryAfter'>): Halt | undefined {
  if (answer.status === 423) return 'locked';
  if (answer.status === 429 || (answer.retryAfter !== undefined && (answer.status < 200 || answer.status >= 300))) return 'rate-limited';
  return undefined;
}

/** The discover-attach step when the service asked to stop: said with what it answered. */
export function haltStep(halt: Halt, answer: ProbeAnswer, url: string, sent: number, extra: Partial<DoctorStep> = {}): DoctorStep {
  const after = answer.retryAfter !== undefined ? ` (Retry-After: ${answer.retryAfter})` : '';
  const why = answer.message ?? answer.excerpt;
  return {
    step: 'discover-attach', ok: false, url, result: halt, accepted: [],
    detail: `${halt}: GET ${url} answered ${answer.status}${after}${why ? `: ${why}` : ''}; discovery stopped at once (${sent} requests sent)`,
    hint: halt === 'locked'
      ? 'the service reports the key or the resource as locked: ask the support team to unlock it, and run nothing against the service until then (a further request may extend the lock)'
      : 'the service asks to slow down: wait (Retry-After says how long), then run discovery again with a lower --discovery-rate, or with --try and the presentation the vendor documents; repeated refusals may lock the ApiKey',
    ...extra,
  };
}
