/**
 * doctor/: the steps of the `doctor` command, one file each, and the report shape (this file).
 * May import: shared/, config/, observability/, upstream/, token/, proxy/.
 */
import type { Attachment } from '../config/schema.js';

/** The steps of `doctor`, in the order they run. */
export type DoctorStepName = 'config' | 'connect' | 'gentoken' | 'probe' | 'discover-attach';

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
  /** discover-attach: the presentations the service accepted (any status but 401/403). */
  accepted?: string[];
  /** discover-attach: the `token.attach` list to use (the first accepted presentation). */
  attach?: Attachment[];
  /** discover-attach: the same as a YAML block to paste into the config. */
  attachYaml?: string;
}

/** The text form: one line per step with ✓/✗, problems and the YAML block to paste below their step. */
export function formatSteps(steps: readonly DoctorStep[]): string {
  const lines: string[] = [];
  for (const s of steps) {
    lines.push(`${s.ok ? '✓' : '✗'} ${s.step}: ${s.detail}${s.hint ? ` — hint: ${s.hint}` : ''}`);
    for (const p of s.problems ?? []) lines.push(`    - ${p}`);
    if (s.attachYaml) {
      // Unindented, so it pastes as is into a config file's top level.
      lines.push('Paste into the config file (replacing token.attach):', ...s.attachYaml.trimEnd().split('\n'));
    }
  }
  return `${lines.join('\n')}\n`;
}
