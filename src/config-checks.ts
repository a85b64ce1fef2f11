import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { isRecord, schemaAt, walkProperties, type ConfigPath } from './config-walk.js';
import { parseStrictCidr } from './ip-guard.js';
import { formatTranslationRef, parseTranslationRef } from './localization/translation-ref.js';

/** Records one problem at a config path; the caller formats it with the key's env var. */
export type Report = (path: ConfigPath, reason: string) => void;
type Section = Record<string, unknown>;

const PLACEHOLDERS = new Set(['token', 'apiKey', 'rkObjectId']);
/** RFC 9110 `token` characters, the only ones allowed in header and cookie names. */
const TOKEN_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers an attachment must not set: hop-by-hop (RFC 9110 §7.6.1), message framing or Expect (PITFALLS 2). */
const FORBIDDEN_HEADERS = new Set([
  'connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'proxy-authorization',
  'te', 'trailer', 'transfer-encoding', 'upgrade', 'host', 'content-length', 'expect',
]);
/** Values sent in a header (ApiKey, the localization token): visible ASCII, or `setHeader` throws (PITFALLS 14). */
const HEADER_SAFE = /^[\x21-\x7e]+$/;
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
  const credentials = section(config.credentials);
  const guard = section(config.guard);
  const admin = section(config.admin);
  checkBaseUrl(service, ['service'], report);
  checkCidrs(guard.allow, ['guard', 'allow'], report);
  checkCidrs(guard.trustedProxies, ['guard', 'trustedProxies'], report);
  checkCidrs(admin.allow, ['admin', 'allow'], report);
  checkPair(credentials, ['credentials'], 'apiKey', true, report);
  checkPair(credentials, ['credentials'], 'password', true, report);
  // The same rules the credential store applies at start, so check-config fails as run would.
  checkHeaderValue(credentials.apiKey, ['credentials', 'apiKey'], report);
  if (isRecord(config.localization)) {
    checkBaseUrl(config.localization, ['localization'], report);
    checkPair(config.localization, ['localization'], 'token', false, report);
    checkHeaderValue(config.localization.token, ['localization', 'token'], report);
    checkWatch(config.localization.watch, report);
  }
  checkFiles(config, report);
  checkAttach(section(config.token).attach, credentials.rkObjectId, report);
  checkListeners(section(config.listen), admin, report);
  checkRenewal(section(config.token), report);
  const proxy = section(config.proxy);
  if (typeof proxy.headersTimeoutMs === 'number' && typeof proxy.requestTimeoutMs === 'number'
    && proxy.headersTimeoutMs > proxy.requestTimeoutMs) {
    // Node's http.createServer throws when headersTimeout exceeds requestTimeout.
    report(['proxy', 'headersTimeoutMs'], 'must not exceed proxy.requestTimeoutMs');
  }
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
  if (url.hostname === '') report(path, 'has no host');
  if (url.username !== '' || url.password !== '') report(path, 'must not contain user:password@ credentials');
  if (url.search !== '' || text.includes('?')) report(path, 'must not contain a query string');
  if (url.hash !== '' || text.includes('#')) report(path, 'must not contain a #fragment');
}

function checkCidrs(list: unknown, base: string[], report: Report): void {
  if (!Array.isArray(list)) return;
  list.forEach((entry, i) => {
    if (typeof entry !== 'string') return;
    const range = parseStrictCidr(entry);
    if (typeof range === 'string') report([...base, i], `"${entry}" ${range}`);
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

/** An inline secret that travels in a header. The value is never echoed: it is a secret. */
function checkHeaderValue(value: unknown, path: ConfigPath, report: Report): void {
  if (typeof value !== 'string' || value === '') return;
  if (!HEADER_SAFE.test(value)) report(path, 'must be visible ASCII without spaces or control characters (it is sent in a header)');
}

/**
 * Every `...File` key must name a readable, non-empty regular file; CA files must hold a PEM
 * certificate. Emptiness comes from stat: credential files are never read here.
 */
function checkFiles(config: Section, report: Report): void {
  walkProperties((path) => {
    const key = path[path.length - 1];
    if (typeof key !== 'string' || !key.endsWith('File')) return;
    const value = valueAt(config, path);
    if (typeof value !== 'string' || value === '') return;
    const problem = fileProblem(value);
    if (problem !== undefined) return report(path, problem);
    // Only CA files are read here; credential files are never read by validation.
    if (key === 'caFile' && !readFileSync(value, 'utf8').includes('-----BEGIN CERTIFICATE-----')) {
      report(path, `${value} holds no PEM certificate`);
    }
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

function valueAt(config: Section, path: ConfigPath): unknown {
  let value: unknown = config;
  for (const segment of path) {
    if (!isRecord(value) || typeof segment !== 'string') return undefined;
    value = value[segment];
  }
  return value;
}

function checkAttach(list: unknown, rkObjectId: unknown, report: Report): void {
  if (!Array.isArray(list)) return;
  const seen = new Map<string, number>();
  list.forEach((entry, i) => {
    if (!isRecord(entry)) return;
    const base = ['token', 'attach', i];
    const { in: where, name, value } = entry;
    if (typeof value === 'string') {
      for (const [, placeholder] of value.matchAll(/\{([^{}]*)\}/g)) {
        if (!PLACEHOLDERS.has(placeholder!)) {
          report([...base, 'value'], `unknown placeholder {${placeholder}} (known: {token}, {apiKey}, {rkObjectId})`);
        } else if (placeholder === 'rkObjectId' && rkObjectId === undefined) {
          report([...base, 'value'], 'uses {rkObjectId} but credentials.rkObjectId (B2B_RK_OBJECT_ID) is not set');
        }
      }
      // eslint-disable-next-line no-control-regex
      if (/[\x00-\x1f\x7f]/.test(value)) report([...base, 'value'], 'must not contain control characters (CR, LF, ...)');
      if (where === 'cookie' && /[\s",;\\]/.test(value)) {
        report([...base, 'value'], 'a cookie value must not contain spaces, quotes, commas, semicolons or backslashes');
      }
    }
    if (typeof name !== 'string' || typeof where !== 'string') return;
    if ((where === 'header' || where === 'cookie') && !TOKEN_NAME.test(name)) {
      report([...base, 'name'], `"${name}" is not a valid ${where} name`);
    } else if (where === 'header' && FORBIDDEN_HEADERS.has(name.toLowerCase())) {
      report([...base, 'name'], `${name} is a hop-by-hop or framing header the proxy manages; it cannot be attached`);
    }
    const id = where === 'header' ? `header ${name.toLowerCase()}` : `${where} ${name}`;
    const first = seen.get(id);
    if (first !== undefined) report([...base, 'name'], `duplicates token.attach[${first}] (${where} ${name})`);
    else seen.set(id, i);
  });
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
  const after = renewAt * max;
  if (after < MIN_RENEW_AFTER_SECONDS) {
    report(['token', 'renewAt'], `renews ${after.toFixed(2)} s after issue with maxLifetimeSeconds ${max}; at least ${MIN_RENEW_AFTER_SECONDS} s is needed`);
  }
  if (max - after < MIN_RENEW_WINDOW_SECONDS) {
    report(['token', 'renewAt'], `leaves only ${(max - after).toFixed(2)} s between renewal and expiry with maxLifetimeSeconds ${max}; at least ${MIN_RENEW_WINDOW_SECONDS} s is needed`);
  }
}
