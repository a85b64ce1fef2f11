import ipaddr from 'ipaddr.js';

/**
 * Which forward proxy, if any, carries the connections to one upstream origin. Node ignores
 * HTTPS_PROXY (docs/traps.md T38), so the sidecar resolves it itself, the way curl does:
 * an explicit setting wins (`none` = direct), else `https_proxy`/`HTTPS_PROXY` (`http_proxy`/
 * `HTTP_PROXY` for an http:// upstream; the lower-case name wins, as in curl and Python), minus
 * the hosts `no_proxy`/`NO_PROXY` names.
 */
export interface EgressProxy {
  /** Host and port of the proxy (an http:// proxy: the CONNECT request is plain text to it). */
  readonly host: string;
  readonly port: number;
  /** The proxy's address for logs, /readyz and client messages: user name and password masked. */
  readonly display: string;
  /** Where it came from: `service.proxy`, `localization.proxy`, `HTTPS_PROXY`, ... */
  readonly source: string;
  /** `user:password` from the URL, if it held any (a proxyAuthFile replaces it). */
  readonly urlAuth: string | undefined;
}

/** The outcome of resolving: a proxy, or why the connection is direct (for the start log and doctor). */
export type EgressRoute = { proxy: EgressProxy } | { proxy?: undefined; direct: string };

export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * The proxy for `target`. `setting` is the config key's value (undefined = from the environment);
 * `key` names it in messages. Throws on a proxy URL that cannot be used, naming its source.
 */
export function resolveEgress(setting: string | undefined, key: string, target: URL, env: Environment): EgressRoute {
  if (setting !== undefined) {
    if (setting === 'none') return { direct: `${key} is none` };
    return { proxy: parseProxyUrl(setting, key) };
  }
  const scheme = target.protocol === 'http:' ? 'http' : 'https';
  const found = firstSet(env, [`${scheme}_proxy`, `${scheme.toUpperCase()}_PROXY`]);
  if (!found) return { direct: `no ${key}, no ${scheme.toUpperCase()}_PROXY in the environment` };
  const noProxy = firstSet(env, ['no_proxy', 'NO_PROXY']);
  const entry = noProxy && noProxyEntry(noProxy.value, target);
  if (noProxy && entry) return { direct: describeNoProxyMatch(entry, noProxy.name, target) };
  return { proxy: parseProxyUrl(found.value, found.name) };
}

function firstSet(env: Environment, names: readonly string[]): { name: string; value: string } | undefined {
  for (const name of names) {
    const value = env[name]?.trim();
    if (value) return { name, value };
  }
  return undefined;
}

/**
 * `http://[user:password@]host:port`; a bare `host:port` is read as http:// (curl and Go do
 * too). https:// and socks proxies are refused rather than used as something they are not.
 */
export function parseProxyUrl(text: string, source: string): EgressProxy {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `http://${text}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    throw new Error(`${source}: is not a proxy URL (http://host:port)`);
  }
  if (url.protocol !== 'http:') throw new Error(`${source}: only an http:// proxy is supported (an HTTP CONNECT tunnel), not ${url.protocol}//`);
  if (!url.hostname) throw new Error(`${source}: names no proxy host`);
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) throw new Error(`${source}: a proxy URL has no path, query or fragment`);
  const port = url.port ? Number(url.port) : 80;
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    // decodeURIComponent's own message is "URI malformed", naming neither the variable nor the key.
    throw new Error(`${source}: the user name or password has a malformed % escape (write % as %25)`);
  }
  const urlAuth = url.username || url.password ? `${user}:${password}` : undefined;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  // The user name is masked like the password: some providers put a key in it.
  const shown = `http://${url.username || url.password ? `***${url.password ? ':***' : ''}@` : ''}${url.hostname}:${port}`;
  return { host, port, display: shown, source, urlAuth };
}

/**
 * curl's and Go's NO_PROXY: entries separated by commas or spaces; `*` matches every host; an
 * IP address or CIDR matches an IP-literal target in it; a name matches itself and its
 * subdomains (a leading `.` or `*.` is ignored); an entry with `:port` matches that port only.
 */
export function noProxyMatches(list: string, target: URL): boolean {
  return noProxyEntry(list, target) !== undefined;
}

/** Why a NO_PROXY entry sends `target` direct, as the entry says it: `*` covers every host. */
function describeNoProxyMatch(entry: string, name: string, target: URL): string {
  if (entry === '*') return `${name} is *, so every host goes direct`;
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return entry === host ? `${target.hostname} is in ${name}` : `${target.hostname} matches ${entry} in ${name}`;
}

/** The first entry of a NO_PROXY list that matches `target`, as written (lower-cased), or undefined. */
function noProxyEntry(list: string, target: URL): string | undefined {
  const host = target.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = target.port || (target.protocol === 'http:' ? '80' : '443');
  const ip = ipaddr.isValid(host) ? ipaddr.parse(host) : undefined;
  for (const raw of list.split(/[\s,]+/)) {
    const written = raw.trim().toLowerCase();
    let entry = written;
    if (!entry) continue;
    if (entry === '*') return written;
    if (entry.includes('/')) {
      if (ip && cidrContains(entry, ip)) return written;
      continue;
    }
    let entryPort: string | undefined;
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    if (bracketed) [, entry, entryPort] = bracketed as unknown as [string, string, string | undefined];
    else if (/^[^:]+:\d+$/.test(entry)) [entry, entryPort] = entry.split(':') as [string, string];
    if (entryPort && entryPort !== port) continue;
    if (ipaddr.isValid(entry)) {
      if (ip && sameAddress(ipaddr.parse(entry), ip)) return written;
      continue;
    }
    const name = entry.replace(/^\*?\./, '');
    if (host === name || host.endsWith(`.${name}`)) return written;
  }
  return undefined;
}

function cidrContains(entry: string, ip: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  try {
    const [range, bits] = ipaddr.parseCIDR(entry);
    const a = ip.kind() === 'ipv6' && (ip as ipaddr.IPv6).isIPv4MappedAddress() ? (ip as ipaddr.IPv6).toIPv4Address() : ip;
    return a.kind() === range.kind() && a.match(range, bits);
  } catch {
    return false;
  }
}

function sameAddress(a: ipaddr.IPv4 | ipaddr.IPv6, b: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  return a.kind() === b.kind() && a.toNormalizedString() === b.toNormalizedString();
}
