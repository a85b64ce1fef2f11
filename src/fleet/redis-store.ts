import { isIP } from 'node:net';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from '../observability/logger.js';
import { FileRefusedError, MAX_SECRET_FILE_BYTES, readBoundedFile } from '../shared/bounded-file.js';
import { loadTrustedCas, trustContext } from '../shared/tls.js';
import { parseRecord, serializeRecord, type FleetRecord, type MintedRecord } from './fleet-record.js';
import { FleetStoreError, type FleetStore, type PublishResult, type StoreOperation } from './fleet-store.js';
import { EXTEND_CLAIM, INVALIDATE_RECORD, PUBLISH_RECORD, RELEASE_CLAIM } from './redis-scripts.js';
import { parseRedisUrl } from './redis-url.js';

/** Plain options: the fleet wiring turns `fleet.*` settings into these; this file never reads config. */
export interface RedisStoreOptions {
  /** `redis://[user[:password]@]host[:port][/db]`, `rediss://…` (TLS) or `unix:///path/to/socket[?db=N]` (redis-url.ts). */
  readonly url: string;
  /** The AUTH password; wins over `passwordFile` and a password in the URL. */
  readonly password?: string;
  /**
   * A file whose content (one line) is the AUTH password: read when the store opens, and again
   * whenever Redis refuses the password in use, so a rotation needs no restart.
   */
  readonly passwordFile?: string;
  /** Extra CA certificates (a PEM file) trusted for `rediss://`, besides Node's roots. */
  readonly caFile?: string;
  readonly logger: Logger;
  /** The deadline of each operation, and of each connection attempt, in ms. Default 2,000. */
  readonly operationTimeoutMs?: number;
  /** How long a record outlives its token's lifetime before Redis drops it, in ms. Default 10 minutes. */
  readonly recordGraceMs?: number;
  /** The longest pause between reconnection attempts, in ms. Default 2,000. */
  readonly reconnectMaxDelayMs?: number;
}

const DEFAULT_OPERATION_TIMEOUT_MS = 2_000;
const DEFAULT_RECORD_GRACE_MS = 10 * 60_000;
const DEFAULT_RECONNECT_MAX_DELAY_MS = 2_000;

/** The scripts of redis-scripts.ts as commands of the client (EVALSHA, and EVAL again after a server restart lost them). */
interface ScriptedRedis extends Redis {
  b2bExtendClaim(claimKey: string, holder: string, ttlMs: number): Promise<number>;
  b2bReleaseClaim(claimKey: string, holder: string): Promise<number>;
  b2bPublish(key: string, expected: number, json: string, ttlMs: number, channel: string): Promise<[number, string | number | null]>;
  b2bInvalidate(key: string, version: number, channel: string): Promise<number>;
}

/**
 * The fleet store on Redis (docs/fleet.md, "Redis"), through ioredis. Claims are `SET NX PX`
 * keys, every record change a Lua compare-and-set on the version that also PUBLISHes on the
 * record's channel, and `watch` a subscription on a connection of its own. Operations never wait
 * for a connection: while Redis is unreachable they reject at once (no offline queue), and each is
 * bounded by `operationTimeoutMs` (docs/traps.md T88). Both connections have 'error' listeners
 * (T86) and the subscriptions are renewed on every reconnection (T87). Resolves without waiting for
 * Redis beyond one connection attempt: a store down at start is the caller's to follow.
 */
export async function openRedisStore(options: RedisStoreOptions): Promise<FleetStore> {
  const { logger } = options;
  const operationTimeoutMs = options.operationTimeoutMs ?? DEFAULT_OPERATION_TIMEOUT_MS;
  const recordGraceMs = options.recordGraceMs ?? DEFAULT_RECORD_GRACE_MS;
  const endpoint = parseRedisUrl(options.url);
  let password = options.password ?? (options.passwordFile ? await readPassword(options.passwordFile) : endpoint.password);
  const secrets = [password, endpoint.password].filter((s): s is string => !!s);
  const scrub = (text: string) => scrubbed(text, secrets);
  const ca = endpoint.tls ? loadTrustedCas(options.caFile) : undefined;

  const connection: RedisOptions = {
    ...(endpoint.path !== undefined ? { path: endpoint.path } : { host: endpoint.host!, port: endpoint.port! }),
    db: endpoint.db,
    ...(endpoint.username !== undefined ? { username: endpoint.username } : {}),
    ...(password !== undefined ? { password } : {}),
    // Node's roots plus the extra CA in one context built once (shared/tls.ts, docs/traps.md T10).
    ...(endpoint.tls ? { tls: { ...(isIP(endpoint.host!) ? {} : { servername: endpoint.host! }), ...(ca ? { secureContext: trustContext(ca)! } : {}) } } : {}),
    lazyConnect: true,
    // Fail while disconnected instead of queueing, and never resend a command after a reconnection:
    // the caller re-reads and decides (T88).
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    // Resubscribed by this file, which also tells the watchers (T87).
    autoResubscribe: false,
    commandTimeout: operationTimeoutMs,
    connectTimeout: operationTimeoutMs,
    retryStrategy: (times: number) => Math.min(100 * times, options.reconnectMaxDelayMs ?? DEFAULT_RECONNECT_MAX_DELAY_MS),
    // RESP2 and no INFO, CLIENT SETINFO or HELLO on connect: the ACL user needs only the commands
    // the store runs (docs/fleet.md, "Redis"), and any Redis from 6.0 on (or a proxy before it) answers.
    protocol: 2,
    enableReadyCheck: false,
    disableClientInfo: true,
  };

  const client = new Redis(connection) as ScriptedRedis;
  defineScripts(client);
  // T86: an 'error' with no listener goes to stderr past the logger (and once crashed the process).
  // The last connection error says why the store is unreachable (refused, TLS, WRONGPASS): ioredis
  // itself only says that it is not connected.
  let lastError: string | undefined;
  client.on('error', (err: unknown) => {
    lastError = scrub(messageOf(err));
    logger.debug('fleet store: Redis connection error', { store: 'redis', endpoint: endpoint.display, reason: lastError });
  });
  client.on('ready', () => (lastError = undefined));

  // A rotated password: the operator changes the ACL and the file (a Kubernetes Secret updates the
  // mounted file in place). Connections already open stay authenticated; the next one is refused
  // (WRONGPASS, ioredis then reconnects), so the file is read again then, and every connection's
  // next attempt uses what it holds now. Only a password from the file: an inline one cannot change.
  const connections: Redis[] = [client];
  let rereading = false;
  const onConnectionError = (err: unknown) => {
    const file = options.password === undefined ? options.passwordFile : undefined;
    if (!file || rereading || !AUTH_REFUSED.test(messageOf(err))) return;
    rereading = true;
    readPassword(file).then((fresh) => {
      if (fresh === password) return;
      password = fresh;
      secrets.push(fresh);
      for (const c of connections) c.options.password = fresh;
      logger.info('fleet store: Redis refused the password in use; the password file holds another, used from the next connection', { store: 'redis', endpoint: endpoint.display });
    }, (readErr: unknown) => logger.warn('fleet store: Redis refused the password in use, and the password file cannot be read again', { store: 'redis', endpoint: endpoint.display, reason: messageOf(readErr) }))
      .finally(() => (rereading = false));
  };
  client.on('error', onConnectionError);

  let closed = false;
  const bounded = async <T>(operation: StoreOperation, work: () => Promise<T>): Promise<T> => {
    if (closed) throw new FleetStoreError(operation, `the Redis store (${endpoint.display}) is closed`);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new FleetStoreError(operation, `Redis ${operation}: no answer from ${endpoint.display} within ${operationTimeoutMs} ms`)), operationTimeoutMs);
    });
    try {
      return await Promise.race([work(), deadline]);
    } catch (err) {
      if (err instanceof FleetStoreError) throw err;
      // No cause attached: ioredis errors carry the command's arguments (the record, the token).
      const message = scrub(messageOf(err));
      const reason = client.status === 'ready' && !NOT_CONNECTED.test(message) ? message : `not connected${lastError ? ` (${lastError})` : ''}`;
      throw new FleetStoreError(operation, `Redis ${operation} on ${endpoint.display} failed: ${reason}`);
    } finally {
      clearTimeout(timer);
    }
  };

  // One connection attempt before the store is handed out; a failure is the caller's to see on the
  // first operation, and the client keeps reconnecting.
  await bounded('read', () => client.connect()).catch((err: unknown) =>
    logger.debug('fleet store: Redis not reachable at start', { store: 'redis', endpoint: endpoint.display, reason: scrub(messageOf(err)) }));

  const feed = changeFeed(() => {
    const sub = client.duplicate(); // the options as they are now, the password included
    sub.on('error', onConnectionError);
    connections.push(sub);
    return sub;
  }, logger, endpoint.display, scrub);

  return {
    kind: 'redis',
    async read(key) {
      return parseStored(await bounded('read', () => client.get(key)));
    },
    async claim(key, holder, ttlMs) {
      const ttl = Math.max(1, Math.ceil(ttlMs));
      return bounded('claim', async () => {
        if (await client.set(claimKey(key), holder, 'PX', ttl, 'NX') === 'OK') return true;
        return await client.b2bExtendClaim(claimKey(key), holder, ttl) === 1;
      });
    },
    async release(key, holder) {
      await bounded('release', () => client.b2bReleaseClaim(claimKey(key), holder));
    },
    async publish(key, record: MintedRecord, expectedVersion): Promise<PublishResult> {
      const json = serializeRecord({ ...record, version: expectedVersion + 1 } as FleetRecord);
      const ttlMs = Math.ceil(record.lifetimeSeconds * 1000) + recordGraceMs;
      const [stored, value] = await bounded('publish', () => client.b2bPublish(key, expectedVersion, json, ttlMs, channelOf(key)));
      if (stored === 1) return { ok: true, version: Number(value) };
      return { ok: false, current: parseStored(typeof value === 'string' ? value : null) };
    },
    async invalidate(key, version) {
      return await bounded('invalidate', () => client.b2bInvalidate(key, version, channelOf(key))) === 1;
    },
    watch(key, onChange) {
      if (closed) return () => undefined;
      return feed.add(channelOf(key), onChange);
    },
    async close() {
      if (closed) return;
      closed = true;
      feed.close();
      client.disconnect();
    },
  };
}

/** Redis refusing AUTH: a wrong password (6.0+ with ACLs: WRONGPASS; before: invalid password), or none sent where one is needed. */
const AUTH_REFUSED = /WRONGPASS|invalid password|NOAUTH/i;

/** ioredis's words for a command refused or dropped because the connection is not up (its status may lag). */
const NOT_CONNECTED = /enableOfflineQueue options is false|Connection is closed|max retries per request/i;

/** The claim of a record lives beside it; the change channel is named after it. */
const claimKey = (key: string) => `${key}:claim`;
const channelOf = (key: string) => `${key}:changed`;

function defineScripts(client: Redis): void {
  client.defineCommand('b2bExtendClaim', { numberOfKeys: 1, lua: EXTEND_CLAIM });
  client.defineCommand('b2bReleaseClaim', { numberOfKeys: 1, lua: RELEASE_CLAIM });
  client.defineCommand('b2bPublish', { numberOfKeys: 1, lua: PUBLISH_RECORD });
  client.defineCommand('b2bInvalidate', { numberOfKeys: 1, lua: INVALIDATE_RECORD });
}

/**
 * The change feed: one subscriber connection, opened with the first watch. On every (re)connection
 * it subscribes to every watched channel again and then calls each watcher once, since a change
 * made while it was not subscribed was announced to nobody (docs/traps.md T87).
 */
function changeFeed(open: () => Redis, logger: Logger, display: string, scrub: (text: string) => string) {
  const watchers = new Map<string, Set<() => void>>();
  let subscriber: Redis | undefined;
  let closed = false;

  const call = (channel: string) => {
    for (const onChange of [...watchers.get(channel) ?? []]) {
      try {
        onChange();
      } catch (err) {
        // A watcher's bug must not become an uncaught exception in the client's event handler.
        logger.warn('fleet store: a change watcher threw', { store: 'redis', reason: messageOf(err) });
      }
    }
  };
  const subscribe = (sub: Redis, channels: string[]) => {
    if (channels.length === 0 || sub.status !== 'ready') return;
    // Not subscribed yet (the connection dropped again): the next 'ready' tries again.
    sub.subscribe(...channels).then(() => channels.forEach(call), (err: unknown) =>
      logger.debug('fleet store: Redis subscribe failed', { store: 'redis', endpoint: display, reason: scrub(messageOf(err)) }));
  };
  const connection = (): Redis => {
    if (subscriber) return subscriber;
    const sub = open();
    sub.on('error', (err: unknown) => logger.debug('fleet store: Redis subscriber connection error', { store: 'redis', endpoint: display, reason: scrub(messageOf(err)) }));
    sub.on('ready', () => subscribe(sub, [...watchers.keys()]));
    sub.on('message', (channel: string) => call(channel));
    sub.connect().catch(() => undefined); // reported through 'error'; the client keeps reconnecting
    subscriber = sub;
    return sub;
  };

  return {
    add(channel: string, onChange: () => void): () => void {
      if (closed) return () => undefined;
      const wrapped = () => onChange();
      let set = watchers.get(channel);
      const fresh = !set;
      if (!set) watchers.set(channel, (set = new Set()));
      set.add(wrapped);
      const sub = connection();
      if (fresh) subscribe(sub, [channel]);
      return () => {
        const current = watchers.get(channel);
        if (!current?.delete(wrapped) || current.size > 0) return;
        watchers.delete(channel);
        if (sub.status === 'ready') sub.unsubscribe(channel).catch(() => undefined);
      };
    },
    close(): void {
      closed = true;
      watchers.clear();
      subscriber?.disconnect();
    },
  };
}

async function readPassword(file: string): Promise<string> {
  let text: string;
  try {
    text = await readBoundedFile(file, MAX_SECRET_FILE_BYTES);
  } catch (err) {
    throw new Error(`the Redis password file ${file} ${err instanceof FileRefusedError ? err.reason : messageOf(err)}`);
  }
  const password = text.replace(/\r?\n$/, '');
  if (password === '') throw new Error(`the Redis password file ${file} is empty`);
  return password;
}

function parseStored(value: string | null): FleetRecord | undefined {
  if (value === null) return undefined;
  try {
    return parseRecord(JSON.parse(value));
  } catch {
    return undefined; // not a record: as if none was published (redis-scripts.ts treats it as version 0)
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The message with every known secret and any URL credentials replaced: it is logged and shown by `status`. */
function scrubbed(text: string, secrets: readonly string[]): string {
  let out = text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^\s/@]*@/gi, '$1[REDACTED]@');
  for (const secret of secrets) out = out.split(secret).join('[REDACTED]');
  return out;
}
