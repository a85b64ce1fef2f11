/**
 * doctor/: the steps of the `doctor` command, one file each, and the report shape (this file).
 * May import: shared/, config/, observability/, upstream/, token/, proxy/.
 */
import type { NamedAttachment } from '../shared/attachment.js';

/** The steps of `doctor`, in the order they run. */
export type DoctorStepName = 'config' | 'listen' | 'fleet' | 'connect' | 'gentoken' | 'probe' | 'discover-attach';

/**
 * discover-attach's verdict: `configured` (the config already works; exit 0), `found` (a block to
 * paste; exit 0), `ambiguous` (several accepted), `none`, `cannot-tell` (the path needs no token),
 * `rate-limited` (a 429 or `Retry-After`) and `locked` (a 423), after which discovery stopped at
 * once, and `needs-own-token` (a sidecar runs with this config: trying presentations needs a token
 * of doctor's own, `--own-token`).
 */
export type DiscoveryResult = 'configured' | 'found' | 'ambiguous' | 'none' | 'cannot-tell' | 'rate-limited' | 'locked' | 'needs-own-token';

/** One presentation discover-attach sent, and what came back. */
export interface TriedPresentation {
  label: string;
  status?: number;
  /** The start of the answer (redacted, then cut). */
  excerpt?: string;
  /** Why a 2xx was not taken as evidence. */
  note?: string;
  /** No answer: the error code. */
  error?: string;
  established?: boolean;
}

/** What the service answered on the probe path without a valid token. */
interface BaselineAnswer { status: number; challenge?: string; excerpt?: string; location?: string }

/**
 * One checked step: the shape `doctor --json` prints as an array (stable: scripts read it).
 * Never holds a password, ApiKey or token: URLs have no query and templates stay templates.
 */
export interface DoctorStep {
  step: DoctorStepName;
  ok: boolean;
  /** What was checked and what was found, one line. */
  detail: string;
  /** On failure: what to change, naming the config key when one is the cause. */
  hint?: string;
  /** The URL called (gentoken, probe), without credentials. */
  url?: string;
  /** The HTTP status the service answered (gentoken, probe). */
  status?: number;
  /** config: every problem, as `check-config` lists them. */
  problems?: string[];
  /** discover-attach: the presentations established by evidence (a 2xx the baseline did not get). */
  accepted?: string[];
  /** discover-attach: the verdict. */
  result?: DiscoveryResult;
  /** discover-attach: every presentation sent, in order, with its answer. */
  tried?: TriedPresentation[];
  /** discover-attach: the answers without a token and with one the service never issued, for a support ticket. */
  baseline?: { withoutToken: BaselineAnswer; withUnknownToken: BaselineAnswer };
  /** discover-attach: the `token.attach` list to use (the first accepted presentation). */
  attach?: NamedAttachment[];
  /** discover-attach: the same as a YAML block to paste into the config. */
  attachYaml?: string;
}

/** The text form: one line per step with ✓/✗, problems and the YAML block to paste below their step. */
export function formatSteps(steps: readonly DoctorStep[]): string {
  const lines: string[] = [];
  for (const s of steps) {
    lines.push(`${s.ok ? '✓' : '✗'} ${s.step}: ${s.detail}${s.hint ? ` — hint: ${s.hint}` : ''}`);
    for (const p of s.problems ?? []) lines.push(`    - ${p}`);
    if (s.baseline) {
      for (const [what, b] of [['without a token', s.baseline.withoutToken], ['with an unknown token', s.baseline.withUnknownToken]] as const) {
        lines.push(`    baseline ${what}: ${b.status}${b.location ? ` → ${b.location}` : ''}${b.challenge ? ` WWW-Authenticate: ${b.challenge}` : ''}${b.excerpt ? ` "${b.excerpt}"` : ''}`);
      }
    }
    for (const t of s.tried ?? []) {
      const answer = t.error ? `no answer (${t.error})` : String(t.status);
      lines.push(`    ${t.established ? '✓' : ' '} ${answer.padEnd(3)} ${t.label}${t.excerpt ? ` "${t.excerpt}"` : ''}${t.note ? ` — ${t.note}` : ''}`);
    }
    if (s.attachYaml) {
      // Unindented, so it pastes as is into a config file's top level.
      lines.push('Paste into the config file (replacing token.attach):', ...s.attachYaml.trimEnd().split('\n'));
    }
  }
  return `${lines.join('\n')}\n`;
}
