import { ALLOW_INSPECTOR_ENV } from './runtime-risks.js';
import { envBindings } from './walk.js';

/**
 * Warnings for `B2B_*` environment variables that no key reads: a typo (`B2B_PASWORD`) is
 * otherwise silently ignored and the file's value used. Names the closest known variable;
 * never the value, which may be a secret.
 */
export function unknownEnvWarnings(env: NodeJS.ProcessEnv, known: readonly string[] = [...envBindings().map((b) => b.env), ALLOW_INSPECTOR_ENV]): string[] {
  const names = new Set(known);
  const out: string[] = [];
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('B2B_') || names.has(name)) continue;
    const closest = closestName(name, known);
    out.push(`environment variable ${name} is not a setting and is ignored${closest ? ` (did you mean ${closest}?)` : ''}`);
  }
  return out;
}

function closestName(name: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const d = editDistance(name, candidate);
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/** Levenshtein distance (insert, delete, substitute), two rows. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}
