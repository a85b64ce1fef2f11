import { statSync } from 'node:fs';
import type { Config } from './schema.js';
import { aliasWarnings } from './aliases.js';
import { envReplacements, inlineSecretsExposed } from './load-config.js';
import { secretFileKeys } from './walk.js';
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
 * - a wildcard `listen.host` while `guard.allow` admits only loopback: remote clients get 403;
 * - a `guard.trustedProxies` entry wider than one address: every client inside it may name its
 *   own source address in X-Forwarded-For;
 * - a secret file (`x-secret-file` in the schema) every local user can read (mode o+r), and a
 *   secret written inline in a config file every local user can read;
 * - an environment variable that displaced a file setting (`B2B_PASSWORD` over `passwordFile`);
 * - a deprecated key still set (config/aliases.ts: `proxy.timeoutMs`).
 */
export function configWarnings(config: Config): ConfigWarning[] {
  const out: ConfigWarning[] = envReplacements(config).map((message) => ({ message }));
  for (const message of aliasWarnings(config)) out.push({ message });
  for (const entry of config.guard.trustedProxies) {
    const range = parseStrictCidr(entry);
    if (typeof range === 'string') continue;
    const hostBits = range[0].kind() === 'ipv4' ? 32 : 128;
    if (range[1] < hostBits) {
      out.push({
        message: `guard.trustedProxies entry ${entry} is wider than one address: any client in it can pick its own source address with X-Forwarded-For; list the proxies' own addresses`,
        fields: { trustedProxies: config.guard.trustedProxies },
      });
    }
  }
  for (const [key, file] of secretFileKeys(config)) {
    let mode: number;
    try {
      mode = statSync(file).mode;
    } catch {
      continue; // unreadable files are configuration errors, reported elsewhere
    }
    if ((mode & 0o004) !== 0) {
      out.push({
        message: `${key}: ${file} is readable by every user of this host (mode ${(mode & 0o777).toString(8).padStart(4, '0')}); make it 0600 or 0640 with a group for the sidecar`,
        fields: { file },
      });
    }
  }
  const inline = inlineSecretsExposed(config);
  if (inline) {
    const mode = inline.mode.toString(8).padStart(4, '0');
    for (const key of inline.keys) {
      out.push({
        message: `${key} is written in ${inline.file}, which every user of this host can read (mode ${mode}): make the file 0600 or 0640 with a group for the sidecar, or move the secret to ${secretFileFor(key)}`,
        fields: { file: inline.file, key },
      });
    }
  }
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

/** Where an inline secret belongs instead: a proxy URL's credentials in its AuthFile, a Redis URL's password in fleet.redisPasswordFile. */
function secretFileFor(key: string): string {
  if (key.endsWith('.proxy')) return `${key}AuthFile`;
  if (key === 'fleet.redisUrl') return 'fleet.redisPasswordFile';
  return `${key}File`;
}
