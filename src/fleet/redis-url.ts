/**
 * Where the Redis store connects, read from the one URL an operator writes (docs/fleet.md, "Redis"):
 * `redis://[user[:password]@]host[:port][/db]`, `rediss://` the same over TLS, `unix:///path/to/socket[?db=N]`.
 * Read here once, into plain connection options: the URL itself (with its password) never reaches
 * the client library, a log line or an error message.
 */
export interface RedisEndpoint {
  readonly host?: string;
  readonly port?: number;
  /** A unix socket path (`unix://`). */
  readonly path?: string;
  readonly tls: boolean;
  readonly db: number;
  /** The ACL user from the URL (Redis 6+), when one is named. */
  readonly username?: string;
  /** The password from the URL, when one is written there. */
  readonly password?: string;
  /** The URL with no credentials and no query: safe for messages. */
  readonly display: string;
}

const DEFAULT_PORT = 6379;

/** Parses `url`; throws an Error whose message carries no credentials when it is not one of the three forms. */
export function parseRedisUrl(url: string): RedisEndpoint {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('the Redis URL is not a URL (redis://host:port, rediss://host:port or unix:///path/to/socket)');
  }
  const db = databaseOf(parsed);
  if (parsed.protocol === 'unix:') {
    if (parsed.username || parsed.password) throw new Error('a unix:// Redis URL takes no credentials: give the password as a file and the user in a redis:// URL, or use the default user');
    if (parsed.host !== '' || !parsed.pathname.startsWith('/') || parsed.pathname === '/') throw new Error('a unix:// Redis URL names an absolute socket path: unix:///path/to/redis.sock');
    const path = decodeURIComponent(parsed.pathname);
    return { path, tls: false, db, display: `unix://${path}` };
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new Error(`the Redis URL's scheme ${JSON.stringify(parsed.protocol)} is not redis:, rediss: or unix:`);
  }
  if (parsed.hostname === '') throw new Error('the Redis URL names no host');
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const port = parsed.port === '' ? DEFAULT_PORT : Number(parsed.port);
  return {
    host, port, tls: parsed.protocol === 'rediss:', db,
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    display: `${parsed.protocol}//${parsed.host}${db === 0 ? '' : `/${db}`}`,
  };
}

/** `/N` on redis:// and rediss://, `?db=N` on unix://; 0 when absent. */
function databaseOf(url: URL): number {
  const raw = url.protocol === 'unix:' ? url.searchParams.get('db') ?? '' : url.pathname.replace(/^\//, '');
  if (raw === '') return 0;
  if (!/^\d{1,5}$/.test(raw)) throw new Error(`the Redis URL's database ${JSON.stringify(raw)} is not a number`);
  return Number(raw);
}
