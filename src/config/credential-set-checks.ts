/**
 * check-config's problems with the credential sets (docs/credential-sets.md), each named by its
 * key (`credentials[1].apiKey`): per set the keys of one set, then what sets may not share: an
 * id, a listener address (nor the top-level listen or admin), a path prefix, the default.
 * Runs on the (possibly partly invalid) data after ajv, like every check in checks.ts.
 */
import type { CredentialCarrier } from './credential-content.js';
import { isRecord, type ConfigPath, type Report } from './walk.js';

/** The checks of one key that checks.ts owns, handed in (it calls this file: no import cycle). */
export interface KeyChecks {
  checkPair(sec: Section, base: string[], key: string, required: boolean, report: Report): void;
  checkSecretValue(value: unknown, path: ConfigPath, carrier: CredentialCarrier, report: Report): void;
  checkBaseUrl(sec: Section, base: string[], report: Report): void;
  checkCidrs(list: unknown, base: string[], report: Report, tooWide?: string): void;
  checkHost(host: unknown, path: ConfigPath, report: Report): void;
}

/** Hosts that bind every address: they clash with any host on the same port (as in checks.ts). */
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);

type Section = Record<string, unknown>;
const section = (value: unknown): Section => (isRecord(value) ? value : {});

/** Both forms: the object form keeps today's checks and messages exactly. */
export function checkCredentialSets(config: Section, wideOk: boolean, report: Report, keys: KeyChecks): void {
  const { checkPair, checkSecretValue, checkBaseUrl, checkCidrs } = keys;
  const raw = config.credentials;
  if (!Array.isArray(raw)) {
    const credentials = section(raw);
    checkPair(credentials, ['credentials'], 'apiKey', true, report);
    checkPair(credentials, ['credentials'], 'password', true, report);
    // The same rules the credential store applies at start, so check-config fails as run would.
    checkSecretValue(credentials.apiKey, ['credentials', 'apiKey'], 'header', report);
    checkSecretValue(credentials.password, ['credentials', 'password'], 'body', report);
    return;
  }
  const sets = raw.map(section);
  const service = section(config.service);
  sets.forEach((set, i) => {
    const base = ['credentials', i];
    checkPair(set, base as string[], 'apiKey', true, report);
    checkPair(set, base as string[], 'password', true, report);
    checkSecretValue(set.apiKey, [...base, 'apiKey'], 'header', report);
    checkSecretValue(set.password, [...base, 'password'], 'body', report);
    // The service section's allowInsecureHttp covers every installation.
    if (typeof set.baseUrl === 'string') checkBaseUrl({ baseUrl: set.baseUrl, allowInsecureHttp: service.allowInsecureHttp }, base as string[], report);
    checkCidrs(set.headerAllow, [...base, 'headerAllow'] as string[], report, wideOk ? undefined : 'lets everyone choose this set with B2B-Credential');
    checkSetListen(set.listen, [...base, 'listen'], report, keys.checkHost);
    checkPrefixShape(set.pathPrefix, [...base, 'pathPrefix'], report);
  });
  checkIds(sets, report);
  checkAddresses(sets, section(config.listen), section(config.admin), report);
  checkPrefixes(sets, config.localization, report);
  checkDefaults(sets, report);
}

function checkIds(sets: Section[], report: Report): void {
  const first = new Map<string, number>();
  sets.forEach((set, i) => {
    if (typeof set.id !== 'string') return;
    const j = first.get(set.id);
    if (j !== undefined) report(['credentials', i, 'id'], `"${set.id}" is already the id of credentials[${j}]: ids must be unique`);
    else first.set(set.id, i);
  });
}

function checkSetListen(value: unknown, path: ConfigPath, report: Report, checkHost: KeyChecks['checkHost']): void {
  if (!isRecord(value)) return;
  const tcp = value.port !== undefined || value.host !== undefined;
  const socket = value.socket !== undefined;
  if (tcp && socket) report(path, 'set either host and port or socket, not both');
  else if (!socket && value.port === undefined) report(path, 'set port (and host) or socket');
  if (!socket && (value.socketMode !== undefined || value.socketGroup !== undefined)) report(path, 'socketMode and socketGroup need socket');
  if (typeof value.host === 'string') checkHost(value.host, [...path, 'host'], report);
}

function checkPrefixShape(value: unknown, path: ConfigPath, report: Report): void {
  if (typeof value !== 'string') return;
  if (!/^\/[^?#\s]*\/$/.test(value) || value.includes('//')) report(path, `"${value}" must start and end with / (e.g. /objects-12/), without //, ? or #`);
}

/** The address a listener binds: `tcp host:port` (port 0 never clashes) or `socket path`. */
function addressOf(l: Section): { key: string; host?: string; port?: number } | undefined {
  if (typeof l.socket === 'string') return { key: `socket ${l.socket}` };
  if (typeof l.port !== 'number' || l.port === 0) return undefined;
  const host = typeof l.host === 'string' ? l.host.toLowerCase() : '127.0.0.1';
  return { key: `${host}:${l.port}`, host, port: l.port };
}

function clash(a: NonNullable<ReturnType<typeof addressOf>>, b: NonNullable<ReturnType<typeof addressOf>>): boolean {
  if (a.key === b.key) return true;
  if (a.port === undefined || a.port !== b.port) return false;
  return WILDCARD_HOSTS.has(a.host!) || WILDCARD_HOSTS.has(b.host!);
}

function checkAddresses(sets: Section[], listen: Section, admin: Section, report: Report): void {
  const taken: Array<{ at: NonNullable<ReturnType<typeof addressOf>>; what: string }> = [];
  const top = addressOf({ host: listen.host ?? '127.0.0.1', port: listen.port ?? 8080 });
  if (top) taken.push({ at: top, what: 'listen' });
  if (typeof listen.socket === 'string') taken.push({ at: { key: `socket ${listen.socket}` }, what: 'listen.socket' });
  const adm = addressOf({ host: admin.host ?? '127.0.0.1', port: admin.port ?? 9464 });
  if (adm) taken.push({ at: adm, what: 'admin' });
  sets.forEach((set, i) => {
    if (!isRecord(set.listen)) return;
    const at = addressOf(set.listen);
    if (!at) return;
    const other = taken.find((t) => clash(t.at, at));
    if (other) report(['credentials', i, 'listen'], `${at.key} is already the address of ${other.what}: each set's listener needs its own`);
    else taken.push({ at, what: `credentials[${i}].listen` });
  });
}

/** Two prefixes overlap when one is the other or starts it on a segment boundary. */
function overlaps(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

function checkPrefixes(sets: Section[], localization: unknown, report: Report): void {
  const seen: Array<{ prefix: string; what: string }> = [];
  if (isRecord(localization)) {
    const l10n = typeof localization.pathPrefix === 'string' ? localization.pathPrefix : '/l10n';
    seen.push({ prefix: l10n.replace(/\/+$/, ''), what: `the localization route (localization.pathPrefix ${l10n})` });
  }
  sets.forEach((set, i) => {
    if (typeof set.pathPrefix !== 'string' || !set.pathPrefix.startsWith('/')) return;
    const prefix = set.pathPrefix.replace(/\/+$/, '');
    const other = seen.find((s) => overlaps(s.prefix, prefix));
    if (other) report(['credentials', i, 'pathPrefix'], `"${set.pathPrefix}" overlaps ${other.what}: a request under it could not tell which to use`);
    else seen.push({ prefix, what: `credentials[${i}].pathPrefix` });
  });
}

/** At most one set without a selector: it serves the shared listener's requests that choose none. */
function checkDefaults(sets: Section[], report: Report): void {
  let first: number | undefined;
  sets.forEach((set, i) => {
    if (set.listen !== undefined || set.pathPrefix !== undefined || set.headerAllow !== undefined) return;
    if (first === undefined) first = i;
    else report(['credentials', i], `has no selector (listen, pathPrefix or headerAllow), like credentials[${first}]: only one set may serve the requests on the shared listener that choose none`);
  });
}
