import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;
export type Range = [Address, number];

/**
 * Parses one `guard.allow` / `trustedProxies` entry strictly: four-part decimal IPv4 or IPv6,
 * optionally with a prefix length, no host bits set. ipaddr.js alone accepts `127.1`,
 * `0177.0.0.1` and `10.1/16` (docs/traps.md T19), so those are rejected here.
 * Returns the range, or a reason string.
 */
export function parseStrictCidr(entry: string): Range | string {
  const text = entry.trim();
  const [addr, prefix, extra] = text.split('/');
  if (extra !== undefined || addr === undefined || addr === '') return 'is not an address or CIDR';
  if (prefix !== undefined && !/^\d{1,3}$/.test(prefix)) return 'has an invalid prefix length';
  // ipaddr.js keeps a zone (`fe80::1%eth0`) in toString(), so the host-bit check below misread it.
  // Peers are compared without zones, so an entry with one could never mean what it says.
  const zone = addr.indexOf('%');
  if (zone !== -1 && addr.includes(':')) return `has a zone index (${addr.slice(zone)}); write the address without it, e.g. ${addr.slice(0, zone)}${prefix === undefined ? '' : `/${prefix}`}`;
  let parsed: Address;
  if (ipaddr.IPv4.isValidFourPartDecimal(addr)) {
    parsed = ipaddr.IPv4.parse(addr);
  } else if (addr.includes(':') && ipaddr.IPv6.isValid(addr)) {
    parsed = ipaddr.IPv6.parse(addr);
  } else {
    return 'is not a four-part decimal IPv4 or an IPv6 address';
  }
  const max = parsed.kind() === 'ipv4' ? 32 : 128;
  const bits = prefix === undefined ? max : Number(prefix);
  if (bits > max) return `has a prefix length above ${max}`;
  const network = parsed.kind() === 'ipv4'
    ? ipaddr.IPv4.networkAddressFromCIDR(`${parsed.toString()}/${bits}`)
    : ipaddr.IPv6.networkAddressFromCIDR(`${parsed.toString()}/${bits}`);
  if (network.toString() !== parsed.toString()) {
    return `has host bits set (did you mean ${network.toString()}/${bits}?)`;
  }
  return [parsed, bits];
}

/** The IPv4-mapped block `::ffff:0:0/96`: its last 32 bits are an IPv4 address (RFC 4291 §2.5.5.2). */
const MAPPED = ipaddr.IPv6.parse('::ffff:0:0');
/** Narrowest ranges that still count as "everyone". */
const MIN_IPV4_PREFIX = 8;
const MIN_IPV6_PREFIX = 16;

/**
 * The IPv4 range an IPv6 entry stands for, since clients are judged by their IPv4 form
 * (`::ffff:10.0.0.0/104` is 10.0.0.0/8; `::/0` includes every IPv4-mapped address, so all of
 * IPv4). Undefined when the entry holds no IPv4-mapped address.
 */
export function ipv4Equivalent([addr, bits]: Range): Range | undefined {
  if (addr.kind() !== 'ipv6') return undefined;
  const v6 = addr as ipaddr.IPv6;
  if (bits >= 96) return v6.isIPv4MappedAddress() ? [v6.toIPv4Address(), bits - 96] : undefined;
  return MAPPED.match(v6, bits) ? [ipaddr.IPv4.parse('0.0.0.0'), 0] : undefined;
}

/**
 * True when a range admits (nearly) everyone: IPv4 shorter than /8, IPv6 shorter than /16, or
 * IPv6 holding all of IPv4 through the mapped block (`::ffff:0:0/96`, `::/80`).
 */
export function coversEveryone(range: Range): boolean {
  const v4 = range[0].kind() === 'ipv4' ? range : ipv4Equivalent(range);
  if (v4 !== undefined && v4[1] < MIN_IPV4_PREFIX) return true;
  return range[0].kind() === 'ipv6' && range[1] < MIN_IPV6_PREFIX;
}

/**
 * Compiles a list once; the returned predicate is what runs per connection. Fails closed.
 * IPv6 entries that hold IPv4-mapped addresses also match the plain IPv4 client, because peers
 * are normalised to IPv4 (parsePeer) before they are judged.
 */
export function compileRanges(entries: readonly string[]): (addr: Address) => boolean {
  const v4: Range[] = [];
  const v6: Range[] = [];
  for (const entry of entries) {
    const range = parseStrictCidr(entry);
    if (typeof range === 'string') throw new Error(`${entry} ${range}`);
    (range[0].kind() === 'ipv4' ? v4 : v6).push(range);
    const mapped = ipv4Equivalent(range);
    if (mapped) v4.push(mapped);
  }
  return (addr) => {
    const list = addr.kind() === 'ipv4' ? v4 : v6;
    for (const range of list) if (addr.match(range)) return true;
    return false;
  };
}

/** Parses a peer or forwarded address; IPv4-mapped IPv6 becomes IPv4 (docs/traps.md T18). */
export function parsePeer(text: string | undefined): Address | undefined {
  if (typeof text !== 'string' || text.length === 0 || text.length > 64) return undefined;
  try {
    if (!ipaddr.isValid(text)) return undefined;
    // Forwarded headers are attacker-controlled: only accept canonical IPv4 spellings.
    if (!text.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
    return ipaddr.process(text);
  } catch {
    return undefined;
  }
}

export interface IpGuard {
  /** The client address to judge, or undefined when it cannot be determined (→ deny). */
  clientAddress(peer: string | undefined, forwardedFor: string | string[] | undefined): string | undefined;
  /** Whether `client` (as returned by clientAddress) may use the listener. */
  allows(client: string | undefined): boolean;
  /** True when X-Forwarded-For is never consulted, so a decision can be cached per connection. */
  readonly peerOnly: boolean;
}

/**
 * Source-address guard. Only when the direct peer is a trusted proxy is X-Forwarded-For read,
 * and then the rightmost address that is not itself a trusted proxy is the client (proxy-addr's
 * rule). Anything unparsable is denied.
 */
export function compileIpGuard(allow: readonly string[], trustedProxies: readonly string[] = []): IpGuard {
  const allowed = compileRanges(allow);
  const trusted = compileRanges(trustedProxies);
  const peerOnly = trustedProxies.length === 0;
  return {
    peerOnly,
    clientAddress(peer, forwardedFor) {
      const peerAddr = parsePeer(peer);
      if (!peerAddr) return undefined;
      if (peerOnly || !trusted(peerAddr) || forwardedFor === undefined) return peerAddr.toString();
      const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor).split(',');
      let client: Address = peerAddr;
      for (let i = hops.length - 1; i >= 0; i--) {
        const hop = parsePeer(hops[i]!.trim());
        if (!hop) return undefined;
        client = hop;
        if (!trusted(hop)) break;
      }
      return client.toString();
    },
    allows(client) {
      const addr = parsePeer(client);
      return addr !== undefined && allowed(addr);
    },
  };
}
