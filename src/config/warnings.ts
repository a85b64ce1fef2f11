import type { Config } from './schema.js';
import { ipv4Equivalent, parseStrictCidr } from '../shared/ip-guard.js';

/** A start-up warning: a valid configuration that probably does not do what was meant. */
export interface ConfigWarning {
  message: string;
  fields?: Record<string, unknown>;
}

const WILDCARD = new Set(['0.0.0.0', '::']);

/** True for an entry inside 127.0.0.0/8 or ::1 (loopback). */
function isLoopback(entry: string): boolean {
  const parsed = parseStrictCidr(entry);
  if (typeof parsed === 'string') return false;
  const [addr, bits] = ipv4Equivalent(parsed) ?? parsed;
  return addr.kind() === 'ipv4' ? bits >= 8 && addr.range() === 'loopback' : bits === 128 && addr.range() === 'loopback';
}

/**
 * Warnings about a valid config, logged once by `run` at start and printed by `check-config`:
 * - `guard.allowAnyone`: anyone who can reach the listener acts as the integrator;
 * - a wildcard `listen.host` while `guard.allow` admits only loopback: remote clients get 403.
 */
export function configWarnings(config: Config): ConfigWarning[] {
  const out: ConfigWarning[] = [];
  if (config.guard.allowAnyone) {
    out.push({
      message: 'guard.allowAnyone is true: anyone who can reach the proxy listener acts as the integrator',
      fields: { listen: config.listen.host, allow: config.guard.allow, trustedProxies: config.guard.trustedProxies },
    });
  }
  if (WILDCARD.has(config.listen.host) && config.guard.allow.every(isLoopback)) {
    out.push({
      message: `listen.host is ${config.listen.host}, but guard.allow admits only loopback: only clients on this host will be served, others get 403`,
      fields: { allow: config.guard.allow },
    });
  }
  return out;
}
