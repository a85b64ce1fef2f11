import { accessSync, constants, statSync } from 'node:fs';
import { FileRefusedError, MAX_PEM_FILE_BYTES, MAX_SECRET_FILE_BYTES, readBoundedFileSync } from '../shared/bounded-file.js';
import { dirname } from 'node:path';
import { isIP } from 'node:net';
import { checkAttach } from './attach-checks.js';
import { checkFleet } from './fleet-checks.js';
import { checkCredentialSets } from './credential-set-checks.js';
import { isRecord, schemaAt, valuesAt, walkProperties, type ConfigPath, type Report } from './walk.js';
import { credentialFileProblem, credentialValueProblem, type CredentialCarrier } from './credential-content.js';
import { coversEveryone, parseStrictCidr } from '../shared/ip-guard.js';
import { formatTranslationRef, parseTranslationRef } from './translation-ref.js';
import { pemCertificatesProblem } from '../shared/tls.js';
import { API_PREFIX, GENTOKEN_PATH } from '../shared/api-paths.js';
import { parseProxyUrl, resolveEgress } from '../shared/egress-proxy.js';
import { loadClientCertificateSync } from '../shared/client-certificate.js';
import { MAX_SOCKET_PATH_BYTES, PRIVATE_PATH_EXTRA } from '../shared/socket-path.js';
import { socketDirectoryProblem } from './socket-directory.js';

/** Records one problem at a config path; the caller formats it with the key's env var. */
export type { Report } from './walk.js';
type Section = Record<string, unknown>;

/** The API's own prefix: a baseUrl ending in it doubles it in every URL (`.../pub/b2b/v1/pub/b2b/v1/auth/gentoken`). */
const API_PREFIX_END = new RegExp(`${API_PREFIX.replace(/\//g, '\\/')}(\\/auth(\\/gentoken)?)?$`, 'i');
/** Credentials read from files, how each travels. */
const CREDENTIAL_FILES: Record<string, CredentialCarrier> = { apiKeyFile: 'header', passwordFile: 'body', tokenFile: 'header' };
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]', '']);
/** A renewal sooner than this after issue would make the renewal loop spin. */
const MIN_RENEW_AFTER_SECONDS = 1;
/** The time left between renewal and expiry must be at least this for a renewal to land. */
const MIN_RENEW_WINDOW_SECONDS = 0.5;

const section = (value: unknown): Section => (isRecord(value) ? value : {});

/**
 * Checks that JSON Schema cannot express. Runs on the (possibly partly invalid) data after ajv,
 * so every check tolerates wrong types: ajv has already reported those.
 */
export function checkSemantics(config: Section, report: Report): void {
  const service = section(config.service);
  const guard = section(config.guard);
  const admin = section(config.admin);
  checkBaseUrl(service, ['service'], report);
  checkServiceRoot(service.baseUrl, report);
  // An entry covering everyone is an open proxy unless the operator says so.
  const wideOk = guard.allowAnyone === true;
  checkCidrs(guard.allow, ['guard', 'allow'], report, wideOk ? undefined : 'admits everyone');
  checkCidrs(guard.trustedProxies, ['guard', 'trustedProxies'], report, wideOk ? undefined : 'lets everyone set their own source address with X-Forwarded-For');
  checkCidrs(admin.allow, ['admin', 'allow'], report);
  checkCredentialSets(config, wideOk, report, { checkPair, checkSecretValue, checkBaseUrl, checkCidrs, checkHost });
  if (isRecord(config.localization)) {
    checkBaseUrl(config.localization, ['localization'], report);
    checkPair(config.localization, ['localization'], 'token', false, report);
    checkSecretValue(config.localization.token, ['localization', 'token'], 'header', report);
    checkWatch(config.localization.watch, report);
  }
  checkFiles(config, report);
  checkEgress(service, 'service', report);
  if (isRecord(config.localization)) checkEgress(config.localization, 'localization', report);
  checkAttach(section(config.token).attach, attachRkObjectId(config.credentials), report);
  checkHost(section(config.listen).host, ['listen', 'host'], report);
  checkHost(admin.host, ['admin', 'host'], report);
  checkListeners(section(config.listen), admin, report);
  checkSocket(section(config.listen), wideOk, report);
  checkRenewal(section(config.token), report);
  checkFleet(section(config.fleet), report);
  const proxy = section(config.proxy);
  if (typeof proxy.headersTimeoutMs === 'number' && typeof proxy.requestTimeoutMs === 'number'
    && proxy.headersTimeoutMs > proxy.requestTimeoutMs) {
    // Node's http.createServer throws when headersTimeout exceeds requestTimeout.
    report(['proxy', 'headersTimeoutMs'], 'must not exceed proxy.requestTimeoutMs');
  }
}

/** The rkObjectId the attach templates are checked with: a list's first set without one, else its first. */
function attachRkObjectId(credentials: unknown): unknown {
  if (!Array.isArray(credentials)) return section(credentials).rkObjectId;
  const sets = credentials.map(section);
  return (sets.find((s) => s.rkObjectId === undefined) ?? sets[0])?.rkObjectId;
}

function checkBaseUrl(sec: Section, base: string[], report: Report): void {
  const text = sec.baseUrl;
  if (typeof text !== 'string' || text === '') return;
  const path = [...base, 'baseUrl'];
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // The value is not echoed: a malformed URL may still carry user:password.
    return report(path, 'is not an absolute URL (expected https://host[:port][/path])');
  }
  if (url.protocol === 'http:') {
    if (sec.allowInsecureHttp !== true) {
      report(path, `uses http://, which sends credentials in clear text; use https:// (${base.join('.')}.allowInsecureHttp: true is for tests only)`);
    }
  } else if (url.protocol !== 'https:') {
    return report(path, `must be an https:// URL, not ${url.protocol}//`);
  }
  // WHATWG URL reads `https:///path` as host "path"; the text is what the operator meant.
  if (url.hostname === '' || !/^[a-z][a-z0-9+.-]*:\/\/[^/?#\\]/i.test(text.trim())) report(path, 'has no host (expected https://host[:port][/path])');
  if (url.username !== '' || url.password !== '') report(path, 'must not contain user:password@ credentials');
  if (url.search !== '' || text.includes('?')) report(path, 'must not contain a query string');
  if (url.hash !== '' || text.includes('#')) report(path, 'must not contain a #fragment');
}

/**
 * `service.baseUrl` is the API root: the sidecar appends /pub/b2b/v1/auth/gentoken itself and
 * passes proxied paths (which carry /pub/b2b/v1) through. Any other path prefix is allowed.
 */
function checkServiceRoot(text: unknown, report: Report): void {
  if (typeof text !== 'string') return;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return;
  }
  const path = url.pathname.replace(/\/+$/, '');
  const m = API_PREFIX_END.exec(path);
  if (m) {
    report(['service', 'baseUrl'], `ends in ${m[0]}, but baseUrl is the API root without ${API_PREFIX} (the token operation is {baseUrl}${GENTOKEN_PATH}): use ${url.origin}${path.slice(0, m.index)}`);
  }
}

/** `tooWide` set: entries covering everyone are refused with that reason. */
function checkCidrs(list: unknown, base: string[], report: Report, tooWide?: string): void {
  if (!Array.isArray(list)) return;
  list.forEach((entry, i) => {
    if (typeof entry !== 'string') return;
    const range = parseStrictCidr(entry);
    if (typeof range === 'string') return report([...base, i], `"${entry}" ${range}`);
    if (tooWide && coversEveryone(range)) {
      report([...base, i], `"${entry}" ${tooWide}: anyone who can reach the listener would act as the integrator; narrow it, or set guard.allowAnyone: true if that is intended`);
    }
  });
}

/** Exactly one of `key` and `keyFile` (or at most one when the value is optional). */
function checkPair(sec: Section, base: string[], key: string, required: boolean, report: Report): void {
  const fileKey = `${key}File`;
  const fileEnv = schemaAt([...base, fileKey])?.['x-env'];
  const fileName = fileEnv ? `${fileKey} (${fileEnv})` : fileKey;
  const hasValue = sec[key] !== undefined;
  const hasFile = sec[fileKey] !== undefined;
  if (hasValue && hasFile) {
    report([...base, key], `set only one of ${key} and ${fileName}`);
  } else if (required && !hasValue && !hasFile) {
    report([...base, key], `missing credential: set ${key} or ${fileName}`);
  }
}

/** An inline secret, by the credential store's rules. The value is never echoed: it is a secret. */
function checkSecretValue(value: unknown, path: ConfigPath, carrier: CredentialCarrier, report: Report): void {
  if (typeof value !== 'string' || value === '') return;
  const problem = credentialValueProblem(value, carrier);
  if (problem) report(path, problem);
}

/**
 * A listener address must be an IP address or a host name: `[::1]` (URL syntax) and `host:port`
 * fail at bind time. Whether a name resolves is checked by `hostProblems` (config-hosts.ts, asynchronous).
 */
function checkHost(host: unknown, path: ConfigPath, report: Report): void {
  if (typeof host !== 'string' || host === '') return;
  const bracketed = /^\[(.*)\]$/.exec(host);
  if (bracketed) {
    return report(path, isIP(bracketed[1]!) === 6 ? `write an IPv6 address without brackets: ${bracketed[1]}` : 'is not an address or host name');
  }
  if (isIP(host) !== 0) return;
  if (/^[^:]*:\d+$/.test(host)) return report(path, `must not include a port (set ${path[0]}.port)`);
  if (!/^[A-Za-z0-9_.-]+$/.test(host)) report(path, 'is not an IP address or host name');
}

/**
 * Every `...File` key must name a readable, non-empty regular file; CA files must hold parsable
 * certificates; credential files are read and checked by the credential store's own rules
 * (never echoed), so check-config rejects what run would.
 */
function checkFiles(config: Section, report: Report): void {
  walkProperties((keyPath) => {
    const key = keyPath[keyPath.length - 1];
    if (typeof key !== 'string' || !key.endsWith('File')) return;
    // In every item of a list the key is in (`list[1].keyFile`).
    for (const { path, value } of valuesAt(config, keyPath)) checkFile(path, key, value, report);
  });
  const tokenFile = section(config.token).file;
  if (typeof tokenFile === 'string' && tokenFile !== '') {
    const dir = dirname(tokenFile);
    try {
      if (!statSync(dir).isDirectory()) report(['token', 'file'], `${dir} is not a directory`);
    } catch {
      report(['token', 'file'], `directory ${dir} does not exist`);
    }
  }
}

/** One `...File` key's file: readable, within its size cap, and holding what the key promises. */
function checkFile(path: ConfigPath, key: string, value: unknown, report: Report): void {
  if (typeof value !== 'string' || value === '') return;
  const problem = fileProblem(value);
  if (problem !== undefined) return report(path, problem);
  // Read as run reads them: a regular file within the size cap, never blocking (bounded-file.ts).
  const read = (maxBytes: number): string | undefined => {
    try {
      return readBoundedFileSync(value, maxBytes);
    } catch (err) {
      report(path, `${value} ${err instanceof FileRefusedError ? err.reason : 'cannot be read'}`);
      return undefined;
    }
  };
  if (key === 'caFile') {
    const text = read(MAX_PEM_FILE_BYTES);
    const pem = text === undefined ? undefined : pemCertificatesProblem(text);
    if (pem) report(path, `${value} ${pem}`);
  } else if (CREDENTIAL_FILES[key] !== undefined) {
    const text = read(MAX_SECRET_FILE_BYTES);
    const content = text === undefined ? undefined : credentialFileProblem(text, CREDENTIAL_FILES[key]);
    if (content) report(path, `${value} ${content}`);
  }
}

function fileProblem(file: string): string | undefined {
  try {
    const stat = statSync(file);
    if (!stat.isFile()) return `${file} is not a regular file`;
    accessSync(file, constants.R_OK);
    return stat.size === 0 ? `${file} is empty` : undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? `file ${file} does not exist` : `file ${file} is not readable (${code ?? 'error'})`;
  }
}

function checkListeners(listen: Section, admin: Section, report: Report): void {
  const { port, host } = listen;
  if (typeof port !== 'number' || port === 0 || port !== admin.port) return;
  if (typeof host !== 'string' || typeof admin.host !== 'string') return;
  const a = host.toLowerCase();
  const b = admin.host.toLowerCase();
  if (a === b || WILDCARD_HOSTS.has(a) || WILDCARD_HOSTS.has(b)) {
    report(['admin', 'port'], `the admin listener would share ${admin.host}:${port} with listen (${host}:${port})`);
  }
}

function checkWatch(list: unknown, report: Report): void {
  if (!Array.isArray(list)) return;
  const seen = new Set<string>();
  list.forEach((entry, i) => {
    if (typeof entry !== 'string') return;
    let key: string;
    try {
      // Same parser as the poller: category paths and the %2F form are accepted, anything else is not.
      key = formatTranslationRef(parseTranslationRef(entry));
    } catch (err) {
      report(['localization', 'watch', i], `"${entry}": ${(err as Error).message.replace(/^invalid translation reference: /, '')}`);
      return;
    }
    if (seen.has(key)) report(['localization', 'watch', i], `"${entry}" is listed twice`);
    seen.add(key);
  });
}

function checkRenewal(token: Section, report: Report): void {
  const { renewAt, maxLifetimeSeconds: max } = token;
  if (typeof renewAt !== 'number' || typeof max !== 'number') return;
  // Out of the schema's range, ajv has said so; a window computed from it would only add noise
  // (renewAt: 66 gave "leaves only -58500.00 s"). A percentage is the likely slip: say so.
  if (!withinSchema(['token', 'renewAt'], renewAt) || !withinSchema(['token', 'maxLifetimeSeconds'], max)) {
    if (renewAt > 1 && renewAt < 100) report(['token', 'renewAt'], `is a fraction of the lifetime, not a percentage: ${renewAt / 100} renews at ${renewAt} %`);
    return;
  }
  const after = renewAt * max;
  if (after < MIN_RENEW_AFTER_SECONDS) {
    report(['token', 'renewAt'], `renews ${after.toFixed(2)} s after issue with maxLifetimeSeconds ${max}; at least ${MIN_RENEW_AFTER_SECONDS} s is needed`);
  }
  if (max - after < MIN_RENEW_WINDOW_SECONDS) {
    report(['token', 'renewAt'], `leaves only ${(max - after).toFixed(2)} s between renewal and expiry with maxLifetimeSeconds ${max}; at least ${MIN_RENEW_WINDOW_SECONDS} s is needed`);
  }
}

/** True when `value` lies inside the numeric bounds the schema gives the key. */
function withinSchema(path: ConfigPath, value: number): boolean {
  const node = schemaAt(path) as { minimum?: number; maximum?: number; exclusiveMinimum?: number } | undefined;
  if (!node) return true;
  return !(value < (node.minimum ?? -Infinity) || value > (node.maximum ?? Infinity) || value <= (node.exclusiveMinimum ?? -Infinity));
}

/**
 * `listen.socket`: its directory must exist, and its mode is its guard (a unix peer has no address
 * to check): a mode that lets every user connect (o+w) is an open proxy unless the operator says so.
 */
function checkSocket(listen: Section, wideOk: boolean, report: Report): void {
  const { socket, socketMode } = listen;
  if (typeof socket !== 'string' || !socket.startsWith('/')) return;
  const dir = dirname(socket);
  const bytes = Buffer.byteLength(dir) + PRIVATE_PATH_EXTRA;
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH_BYTES || bytes > MAX_SOCKET_PATH_BYTES) {
    report(['listen', 'socket'], `is too long for a unix socket: its directory may have at most ${MAX_SOCKET_PATH_BYTES - PRIVATE_PATH_EXTRA} bytes and the whole path ${MAX_SOCKET_PATH_BYTES}`);
  }
  try {
    const stat = statSync(dir);
    if (!stat.isDirectory()) report(['listen', 'socket'], `${dir} is not a directory`);
    else {
      // The user this check runs as stands for the sidecar's: run the check as the service's user.
      const problem = socketDirectoryProblem(stat, process.geteuid?.() ?? 0);
      if (problem) report(['listen', 'socket'], `directory ${dir} ${problem}`);
    }
  } catch {
    report(['listen', 'socket'], `directory ${dir} does not exist`);
  }
  if (typeof socketMode === 'string' && /^0?[0-7]{3}$/.test(socketMode) && (parseInt(socketMode, 8) & 0o002) !== 0 && !wideOk) {
    report(['listen', 'socketMode'], `"${socketMode}" lets every user of this host connect and act as the integrator; use 0660 with listen.socketGroup, or set guard.allowAnyone: true if that is intended`);
  }
}

/**
 * The proxy and the client certificate of one upstream, checked as run loads them: a proxy URL
 * it can use (the environment's when the key is unset), a proxyAuthFile of `user:password`, both
 * halves of the pair, a key that matches its certificate, a certificate not yet expired.
 */
function checkEgress(upstream: Section, prefix: string, report: Report): void {
  const { proxy, proxyAuthFile, certFile, keyFile, keyPassphraseFile } = upstream;
  if (typeof proxy === 'string' && proxy !== 'none') {
    try {
      parseProxyUrl(proxy, `${prefix}.proxy`);
    } catch (err) {
      report([prefix, 'proxy'], (err as Error).message.replace(`${prefix}.proxy: `, ''));
    }
  } else if (proxy === undefined && typeof upstream.baseUrl === 'string' && URL.canParse(upstream.baseUrl)) {
    try {
      resolveEgress(undefined, `${prefix}.proxy`, new URL(upstream.baseUrl), process.env);
    } catch (err) {
      report([prefix, 'proxy'], `is unset, so the environment's proxy is used, and ${(err as Error).message}`);
    }
  }
  if (typeof proxyAuthFile === 'string' && fileProblem(proxyAuthFile) === undefined) {
    if (proxy === 'none') report([prefix, 'proxyAuthFile'], `has no use: ${prefix}.proxy is none`);
    try {
      if (!readBoundedFileSync(proxyAuthFile, MAX_SECRET_FILE_BYTES).trim().includes(':')) report([prefix, 'proxyAuthFile'], `${proxyAuthFile} must hold user:password`);
    } catch {
      // checkFiles reported it.
    }
  }
  const hasCert = typeof certFile === 'string';
  const hasKey = typeof keyFile === 'string';
  if (hasCert !== hasKey) return report([prefix, hasCert ? 'keyFile' : 'certFile'], `is needed with ${prefix}.${hasCert ? 'certFile' : 'keyFile'} (a client certificate and its key)`);
  if (typeof keyPassphraseFile === 'string' && !hasKey) return report([prefix, 'keyPassphraseFile'], `has no use without ${prefix}.keyFile`);
  if (!hasCert || !hasKey) return;
  const files = [certFile, keyFile, keyPassphraseFile].filter((f): f is string => typeof f === 'string');
  if (files.some((f) => fileProblem(f) !== undefined)) return; // checkFiles reported it
  try {
    loadClientCertificateSync({ key: prefix, certFile, keyFile, keyPassphraseFile: typeof keyPassphraseFile === 'string' ? keyPassphraseFile : undefined }, new Date());
  } catch (err) {
    const message = (err as Error).message;
    const which = (['keyPassphraseFile', 'keyFile', 'certFile'] as const).find((k) => message.startsWith(`${prefix}.${k} `)) ?? 'certFile';
    report([prefix, which], message.slice(`${prefix}.${which} `.length));
  }
}
