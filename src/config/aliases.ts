/**
 * Keys kept under an old name. Each still works: once the config is valid its value moves to the
 * key that replaced it (validate-config.ts), so nothing else ever reads the old name; while it is
 * set, `run` logs a warning at start and `check-config` prints it (warnings.ts).
 */
import type { Config } from './schema.js';
import { formatPath, isRecord, type ConfigPath } from './walk.js';

export interface DeprecatedAlias {
  /** The old key, still accepted. */
  readonly old: ConfigPath;
  /** The key it means; the old one's value overrides it, as it always did. */
  readonly current: ConfigPath;
}

export const DEPRECATED_ALIASES: readonly DeprecatedAlias[] = [
  // The same deadline: the service's response headers on a proxied request, from dispatch (→ 504).
  // proxy.timeoutMs only ever overrode service.timeoutMs; localization.timeoutMs is its own route's.
  { old: ['proxy', 'timeoutMs'], current: ['service', 'timeoutMs'] },
];

function valueAt(data: unknown, path: ConfigPath): unknown {
  let value = data;
  for (const segment of path) value = isRecord(value) ? value[segment as string] : undefined;
  return value;
}

/** Moves each set old key's value to its current key, in validated `data` (the old key stays, for the warning). */
export function applyAliases(data: Record<string, unknown>): void {
  for (const { old, current } of DEPRECATED_ALIASES) {
    const value = valueAt(data, old);
    const parent = valueAt(data, current.slice(0, -1));
    if (value !== undefined && isRecord(parent)) parent[current[current.length - 1] as string] = value;
  }
}

/** One line per old key set in `config`: what replaces it and the value in use. */
export function aliasWarnings(config: Config): string[] {
  return DEPRECATED_ALIASES.filter(({ old }) => valueAt(config, old) !== undefined).map(({ old, current }) =>
    `${formatPath(old)} is deprecated: it is the old name of ${formatPath(current)} (the same setting), which it overrides; ${formatPath(current)} is ${JSON.stringify(valueAt(config, current))} now: set that and remove ${formatPath(old)}`);
}
