import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { testTls } from './tls.js';

/**
 * A Kubernetes API server that implements exactly the calls src/fleet/kubernetes-store.ts makes,
 * on one namespace, and nothing else (anything else answers 404 like an unknown path): GET and
 * PUT of a Secret by name, a LIST of secrets with a `metadata.name` field selector, and a WATCH of
 * them. Each behaviour is the real API server's, from the sources test/fixtures/kubernetes/README.md
 * lists:
 * - every object change takes the next value of one global resourceVersion counter (as etcd's
 *   revision); a LIST answers with the counter's current value, a GET with the object's own;
 * - a PUT whose `metadata.resourceVersion` is not the stored one answers 409 Conflict; a PUT with
 *   none overwrites unconditionally (Secrets allow unconditional update);
 * - a WATCH from a resourceVersion older than the compaction floor answers an ERROR event whose
 *   Status has code 410, reason Expired (the watch cache's way), or an HTTP 410 (reason Gone) when
 *   told so; from a version in range, every later change of the Secret; with none, a synthetic
 *   ADDED of the current state first; the stream ends after `timeoutSeconds`; a BOOKMARK (when
 *   `allowWatchBookmarks=true`) carries only a resourceVersion;
 * - a bearer token is checked on every request (401 Unauthorized for an unknown one) and each
 *   token has an RBAC role: verbs on the one Secret by `resourceNames`, where a list or watch is
 *   allowed only with a `metadata.name` field selector naming it (403 Forbidden otherwise);
 * - every error is a `Status` object: kind Status, apiVersion v1, status Failure, message, reason,
 *   details, code.
 */
export interface KubernetesApiServer {
  readonly url: string;
  readonly namespace: string;
  readonly secretName: string;
  /** The token the API server accepts for the sidecar's ServiceAccount now. */
  readonly token: string;
  /** Every request, in order, with the verb it was authorized as and the status answered. */
  readonly requests: Array<{ method: string; path: string; query: URLSearchParams; verb: string; status: number }>;
  /** A new token for the ServiceAccount; the old one is refused from now on (401). Returns the new one. */
  rotateToken(): string;
  /** A token with its own role: `verbs` on the Secret (by name). */
  addToken(verbs: string[]): string;
  /** The Secret as stored, or undefined. */
  secret(): SecretState | undefined;
  /** Creates (or replaces) the Secret with `data` (base64 values). */
  createSecret(data?: Record<string, string>): void;
  /** Another writer changes the Secret (one data key), as a peer or an operator would. */
  write(key: string, base64: string | null): void;
  /** Runs once, just before the next PUT is judged: a peer's write there makes that PUT a 409. */
  beforeNextPut(fn: () => void): void;
  /** Other objects change: the global resourceVersion moves with no event for this Secret. */
  advanceOthers(n: number): void;
  /**
   * Compaction: every resourceVersion older than the current one is gone. Open watches are ended
   * (`notify`: with an ERROR 410 event first). `as`: how later too-old watches are refused.
   */
  compact(options?: { notify?: boolean; as?: 'event' | 'status' }): void;
  /** A BOOKMARK event with the current resourceVersion to each watch that allowed bookmarks. */
  bookmark(): void;
  /** While set, a watch request is never answered (not even its headers): an API server that hangs. */
  hangWatches(on: boolean): void;
  /** The next request's connection is closed without an answer (a kept-alive connection the server closed just as it was reused). */
  dropNextRequest(): void;
  /**
   * The next `n` requests (watches aside) are refused before they are handled, as the max-in-flight
   * and priority-and-fairness filters refuse them: 429, `Retry-After: <retryAfter>`, a plain-text
   * body (test/fixtures/kubernetes/README.md).
   */
  throttleNext(n: number, retryAfter?: string): void;
  /** Every open connection is cut (a restart of the API server, a load balancer's reset). */
  dropConnections(): void;
  /** Serves from now on with another certificate (a cluster CA rotation), cutting the open connections. */
  useCertificate(material: { certPem: string; keyPem: string }): void;
  /** Open watch streams now. */
  openWatches(): number;
  /** Resolves when at least `n` watch streams are open. */
  watching(n?: number): Promise<void>;
  close(): Promise<void>;
}

export interface SecretState {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; creationTimestamp: string };
  type: 'Opaque';
  data?: Record<string, string>;
}

interface Watcher { res: ServerResponse; from: number; bookmarks: boolean }

const SA = 'system:serviceaccount:apps:orders-service';

export async function startKubernetesApi(options: { namespace?: string; secretName?: string; createSecret?: boolean } = {}): Promise<KubernetesApiServer> {
  const tls = await testTls();
  const namespace = options.namespace ?? 'apps';
  const secretName = options.secretName ?? 'b2b-sidecar-fleet';
  let revision = 100;
  let floor = 0;
  let expiredAs: 'event' | 'status' = 'event';
  let secret: SecretState | undefined;
  const history: Array<{ rv: number; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: SecretState }> = [];
  const watchers = new Set<Watcher>();
  const sockets = new Set<Duplex>();
  const roles = new Map<string, Set<string>>();
  const waiters: Array<() => void> = [];
  let putHook: (() => void) | undefined;
  let dropNext = false;
  let throttled = 0;
  let throttleRetryAfter = '1';
  let hang = false;
  let token = newToken();
  roles.set(token, new Set(['get', 'list', 'watch', 'update']));
  const requests: KubernetesApiServer['requests'] = [];

  function newToken(): string {
    return `sa-token-${randomBytes(12).toString('hex')}`;
  }

  function change(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: SecretState): void {
    const event = { rv: revision, type, object: structuredClone(object) };
    history.push(event);
    for (const w of watchers) send(w.res, { type, object: event.object });
  }

  function store(data: Record<string, string> | undefined, type: 'ADDED' | 'MODIFIED'): void {
    revision++;
    secret = {
      apiVersion: 'v1', kind: 'Secret', type: 'Opaque',
      metadata: {
        name: secretName, namespace, uid: secret?.metadata.uid ?? '5f0c6a55-8d0e-4a5e-9d7b-0d1f2e3a4b5c',
        resourceVersion: String(revision), creationTimestamp: secret?.metadata.creationTimestamp ?? '2026-11-22T12:00:00Z',
      },
      ...(data && Object.keys(data).length ? { data } : {}),
    };
    change(type, secret);
  }

  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => handle(req, res, Buffer.concat(chunks).toString('utf8')));
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function handle(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', 'https://api.invalid');
    const record = { method: req.method ?? '', path: url.pathname, query: url.searchParams, verb: '', status: 0 };
    requests.push(record);
    if (dropNext) {
      dropNext = false;
      req.socket.destroy();
      return;
    }
    if (throttled > 0 && !['1', 'true'].includes(url.searchParams.get('watch') ?? '')) {
      throttled--;
      record.status = 429;
      // maxinflight.go tooManyRequests: the header, then http.Error's plain text.
      res.writeHead(429, { 'retry-after': throttleRetryAfter, 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' });
      res.end('Too many requests, please try again later.\n');
      return;
    }
    const reply = (status: number, object: unknown) => {
      record.status = status;
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(object));
    };
    const fail = (code: number, reason: string, message: string, details?: Record<string, string>) =>
      reply(code, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code });

    const collection = `/api/v1/namespaces/${namespace}/secrets`;
    const named = url.pathname.startsWith(`${collection}/`) ? decodeURIComponent(url.pathname.slice(collection.length + 1)) : undefined;
    if (url.pathname !== collection && (named === undefined || named.includes('/'))) return fail(404, 'NotFound', 'the server could not find the requested resource');
    const watch = ['1', 'true'].includes(url.searchParams.get('watch') ?? '');
    const verb = req.method === 'PUT' ? 'update' : req.method !== 'GET' ? 'other' : named !== undefined ? 'get' : watch ? 'watch' : 'list';
    record.verb = verb;

    // Authentication: the bearer token (a projected token the test rotates).
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const role = bearer === undefined ? undefined : roles.get(bearer);
    if (!role) return fail(401, 'Unauthorized', 'Unauthorized');
    // Authorization: RBAC with resourceNames [secretName]. A list or watch is checked against the
    // name only when its field selector pins metadata.name (the RBAC page, "Referring to resources").
    const selector = url.searchParams.get('fieldSelector');
    const target = named ?? (selector?.startsWith('metadata.name=') ? selector.slice('metadata.name='.length) : undefined);
    if (!role.has(verb) || target !== secretName) {
      const what = named === undefined ? 'secrets is forbidden' : `secrets "${named}" is forbidden`;
      return fail(403, 'Forbidden', `${what}: User "${SA}" cannot ${verb} resource "secrets" in API group "" in the namespace "${namespace}"`,
        { ...(named ? { name: named } : {}), kind: 'secrets' });
    }

    if (verb === 'get') {
      if (!secret) return fail(404, 'NotFound', `secrets "${secretName}" not found`, { name: secretName, kind: 'secrets' });
      return reply(200, secret);
    }
    if (verb === 'list') {
      return reply(200, { kind: 'SecretList', apiVersion: 'v1', metadata: { resourceVersion: String(revision) }, items: secret ? [secret] : [] });
    }
    if (verb === 'update') {
      let object: SecretState;
      try {
        object = JSON.parse(body) as SecretState;
      } catch {
        return fail(400, 'BadRequest', 'the body of the request was in an unknown format');
      }
      putHook?.();
      putHook = undefined;
      if (object.metadata?.name !== secretName) return fail(400, 'BadRequest', 'the name of the object does not match the name on the URL');
      if (!secret) return fail(404, 'NotFound', `secrets "${secretName}" not found`, { name: secretName, kind: 'secrets' });
      const rv = object.metadata.resourceVersion;
      if (rv && rv !== secret.metadata.resourceVersion) {
        return fail(409, 'Conflict', `Operation cannot be fulfilled on secrets "${secretName}": the object has been modified; please apply your changes to the latest version and try again`, { name: secretName, kind: 'secrets' });
      }
      for (const [k, v] of Object.entries(object.data ?? {})) {
        if (!/^[-._a-zA-Z0-9]+$/.test(k) || Buffer.from(v, 'base64').toString('base64') !== v) {
          return fail(422, 'Invalid', `Secret "${secretName}" is invalid: data[${k}]: Invalid value`, { name: secretName, kind: 'Secret' });
        }
      }
      store(object.data ?? undefined, 'MODIFIED');
      return reply(200, secret);
    }
    if (verb === 'watch') return startWatch(url, res, record, fail);
    return fail(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
  }

  function startWatch(url: URL, res: ServerResponse, record: { status: number }, fail: (code: number, reason: string, message: string) => void): void {
    if (hang) return;
    const param = url.searchParams.get('resourceVersion') ?? '';
    const from = param === '' || param === '0' ? undefined : Number(param);
    if (from !== undefined && !Number.isInteger(from)) return fail(400, 'BadRequest', `invalid resource version: ${param}`);
    const tooOld = from !== undefined && from < floor;
    if (tooOld && expiredAs === 'status') return fail(410, 'Gone', `too old resource version: ${from} (${floor})`);
    record.status = 200;
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    // The API server flushes a watch's headers at once, before any event (apiserver
    // pkg/endpoints/handlers/watch.go, WatchServer.ServeHTTP).
    res.flushHeaders();
    if (tooOld) {
      send(res, { type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${from} (${floor})`, reason: 'Expired', code: 410 } });
      res.end();
      return;
    }
    if (from === undefined) {
      if (secret) send(res, { type: 'ADDED', object: secret });
    } else {
      for (const e of history) if (e.rv > from) send(res, { type: e.type, object: e.object });
    }
    const watcher = { res, from: from ?? revision, bookmarks: url.searchParams.get('allowWatchBookmarks') === 'true' };
    watchers.add(watcher);
    const seconds = Number(url.searchParams.get('timeoutSeconds') ?? '1800');
    const timer = setTimeout(() => res.end(), seconds * 1000);
    timer.unref();
    res.on('close', () => {
      clearTimeout(timer);
      watchers.delete(watcher);
    });
    for (const w of waiters.splice(0)) w();
  }

  function send(res: ServerResponse, event: unknown): void {
    if (!res.writableEnded) res.write(`${JSON.stringify(event)}\n`);
  }

  if (options.createSecret !== false) store(undefined, 'ADDED');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `https://127.0.0.1:${port}`,
    namespace,
    secretName,
    get token() {
      return token;
    },
    requests,
    rotateToken() {
      roles.delete(token);
      token = newToken();
      roles.set(token, new Set(['get', 'list', 'watch', 'update']));
      return token;
    },
    addToken(verbs) {
      const t = newToken();
      roles.set(t, new Set(verbs));
      return t;
    },
    secret: () => (secret ? structuredClone(secret) : undefined),
    createSecret(data) {
      store(data, secret ? 'MODIFIED' : 'ADDED');
    },
    write(key, base64) {
      if (!secret) throw new Error('no Secret to write');
      const data = { ...secret.data };
      if (base64 === null) delete data[key];
      else data[key] = base64;
      store(data, 'MODIFIED');
    },
    beforeNextPut(fn) {
      putHook = fn;
    },
    advanceOthers(n) {
      revision += n;
    },
    compact(o = {}) {
      floor = revision;
      expiredAs = o.as ?? 'event';
      for (const w of [...watchers]) {
        if (o.notify) send(w.res, { type: 'ERROR', object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: `too old resource version: ${w.from} (${floor})`, reason: 'Expired', code: 410 } });
        w.res.end();
        watchers.delete(w);
      }
    },
    bookmark() {
      // Only resourceVersion is set in a bookmark's object (API concepts, "Watch bookmarks").
      for (const w of watchers) if (w.bookmarks) send(w.res, { type: 'BOOKMARK', object: { kind: 'Secret', apiVersion: 'v1', metadata: { resourceVersion: String(revision) } } });
    },
    hangWatches(on) {
      hang = on;
    },
    dropNextRequest() {
      dropNext = true;
    },
    throttleNext(n, retryAfter = '1') {
      throttled = n;
      throttleRetryAfter = retryAfter;
    },
    useCertificate(material) {
      server.setSecureContext({ cert: material.certPem, key: material.keyPem });
      for (const socket of sockets) socket.destroy();
    },
    dropConnections() {
      for (const s of sockets) s.destroy();
    },
    openWatches: () => watchers.size,
    watching(n = 1) {
      return new Promise((resolve) => {
        const check = () => (watchers.size >= n ? resolve() : waiters.push(check));
        check();
      });
    },
    async close() {
      for (const w of watchers) w.res.end();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
