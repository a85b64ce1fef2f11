import { systemClock, type Clock } from '../shared/clock.js';
import type { Logger } from '../observability/logger.js';
import { serializeRecord, type FleetRecord, type MintedRecord } from './fleet-record.js';
import { FleetStoreError, type FleetStore, type PublishResult, type StoreOperation } from './fleet-store.js';
import { apiStatus, KubernetesApi, MAX_RETRY_AFTER_WAITS, type ApiResponse } from './kubernetes-api.js';
import { apiServerUrl, readCa, readNamespace, type InClusterEnv } from './kubernetes-in-cluster.js';
import { CLAIM_SUFFIX, claimOf, encode, recordOf, type Claim } from './kubernetes-secret-data.js';
import { SecretWatch, type SecretObject } from './kubernetes-watch.js';
import { SERVICE_ACCOUNT_DIR, ServiceAccountToken, TOKEN_RELOAD_MS } from './service-account-token.js';

/** Plain options: the fleet source turns `fleet.kubernetes*` into these (this file never reads config/ or process.env). */
export interface KubernetesStoreOptions {
  /** The pre-created Secret that holds every record of the fleet (`fleet.kubernetesSecret`). */
  secretName: string;
  /** Its namespace; default: the pod's own, from `namespaceFile`. */
  namespace?: string;
  /** `https://host:port` of the API server; default: from `env`, as every in-cluster client finds it. */
  apiServer?: string;
  /** The process environment's KUBERNETES_SERVICE_HOST and _PORT (kubelet sets them in every container). */
  env?: InClusterEnv;
  /** The projected service-account token; default `/var/run/secrets/kubernetes.io/serviceaccount/token`. */
  tokenFile?: string;
  /** The cluster's CA; default `…/serviceaccount/ca.crt`. */
  caFile?: string;
  /** The pod's namespace; default `…/serviceaccount/namespace`. */
  namespaceFile?: string;
  logger: Logger;
  clock?: Clock;
  /** Deadline of each operation (its re-reads and retries after a 409 included), ms. Default 5000. */
  operationTimeoutMs?: number;
  /** The token file is read again after this long (and at once on a 401), ms. Default 60000. */
  tokenReloadMs?: number;
  /** The watch's reconnection backoff, ms. Default 500 doubling to 30000. */
  watchBackoffMs?: { min: number; max: number };
  /** For jitter; default Math.random. */
  random?: () => number;
}

const DEFAULT_TIMEOUT_MS = 5000;
/** A 409 means the Secret moved (any of its keys): re-read and decide again, within the deadline. */
const MAX_CONFLICTS = 50;

/**
 * The fleet store on one pre-created Kubernetes Secret (docs/fleet.md, "Kubernetes"): the record of
 * key K in data key `K` (base64 of serializeRecord's JSON), its renewal claim in data key
 * `K.claim` (base64 of `{"holder","untilWall"}`, a wall-clock lapse time). Every change is a GET
 * then a PUT of the whole Secret carrying the `metadata.resourceVersion` that was read: the API
 * server applies it only if nobody wrote the Secret since, and answers 409 Conflict otherwise
 * (kubernetes.io API concepts, "Resource versions"; the API server's optimistic lock). A 409 says
 * the *Secret* moved, not which key: the store reads again and decides again, so a peer's write
 * to another record or claim costs a retry, never a lost race (docs/traps.md T89); the
 * compare-and-set on the record's own version is decided on the fresh read. Never a PUT without a
 * resourceVersion: for Secrets the API server then overwrites unconditionally.
 *
 * Opening does no network I/O (an API server down at start is an operation's FleetStoreError,
 * not a failed start); it rejects only when the local setup is wrong (no API server address, no
 * namespace, an unreadable CA file).
 */
export async function openKubernetesStore(options: KubernetesStoreOptions): Promise<FleetStore> {
  const clock = options.clock ?? systemClock;
  const server = apiServerUrl(options.apiServer, options.env);
  const namespace = options.namespace ?? readNamespace(options.namespaceFile ?? `${SERVICE_ACCOUNT_DIR}/namespace`);
  const caFile = options.caFile ?? `${SERVICE_ACCOUNT_DIR}/ca.crt`;
  const ca = { pem: readCa(caFile), file: caFile, read: () => readCa(caFile), onChange: (words: string) => options.logger.info(`fleet store: ${words}`, { store: 'kubernetes' }) };
  const token = new ServiceAccountToken(options.tokenFile ?? `${SERVICE_ACCOUNT_DIR}/token`, clock, options.tokenReloadMs ?? TOKEN_RELOAD_MS);
  return new KubernetesStore(options, new KubernetesApi(server, ca, token, clock), namespace, clock, token.file);
}

class KubernetesStore implements FleetStore {
  readonly kind = 'kubernetes';
  readonly #o: KubernetesStoreOptions;
  readonly #api: KubernetesApi;
  readonly #namespace: string;
  readonly #clock: Clock;
  readonly #tokenFile: string;
  readonly #timeoutMs: number;
  readonly #path: string;
  #closed = false;
  #watch: SecretWatch | undefined;
  /** Per watched key: the last base64 value seen (UNSEEN before the first) and who to tell. */
  readonly #watchers = new Map<string, { last: string | undefined | typeof UNSEEN; callbacks: Set<() => void> }>();

  constructor(o: KubernetesStoreOptions, api: KubernetesApi, namespace: string, clock: Clock, tokenFile: string) {
    this.#o = o;
    this.#api = api;
    this.#namespace = namespace;
    this.#clock = clock;
    this.#tokenFile = tokenFile;
    this.#timeoutMs = o.operationTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.#path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets/${encodeURIComponent(o.secretName)}`;
  }

  read(key: string): Promise<FleetRecord | undefined> {
    return this.#operation('read', async (call) => recordOf((await this.#get('read', call)).data?.[key]));
  }

  claim(key: string, holder: string, ttlMs: number): Promise<boolean> {
    return this.#mutate('claim', (data) => {
      const now = this.#clock.wallNow();
      const held = claimOf(data[key + CLAIM_SUFFIX]);
      if (held && held.holder !== holder && held.untilWall > now) return { result: false };
      return { result: true, write: { [key + CLAIM_SUFFIX]: encode(JSON.stringify({ holder, untilWall: now + ttlMs } satisfies Claim)) } };
    });
  }

  release(key: string, holder: string): Promise<void> {
    return this.#mutate('release', (data) => {
      if (claimOf(data[key + CLAIM_SUFFIX])?.holder !== holder) return { result: undefined };
      return { result: undefined, write: { [key + CLAIM_SUFFIX]: null } };
    });
  }

  publish(key: string, record: MintedRecord, expectedVersion: number): Promise<PublishResult> {
    return this.#mutate('publish', (data): { result: PublishResult; write?: Record<string, string> } => {
      const current = recordOf(data[key]);
      if ((current?.version ?? 0) !== expectedVersion) return { result: { ok: false, current } };
      const version = expectedVersion + 1;
      return { result: { ok: true, version }, write: { [key]: encode(serializeRecord({ ...record, version })) } };
    });
  }

  invalidate(key: string, version: number): Promise<boolean> {
    return this.#mutate('invalidate', (data) => {
      const current = recordOf(data[key]);
      if (current?.version !== version) return { result: false };
      if (current.invalid) return { result: true };
      return { result: true, write: { [key]: encode(serializeRecord({ ...current, invalid: true })) } };
    });
  }

  watch(key: string, onChange: () => void): () => void {
    let entry = this.#watchers.get(key);
    if (!entry) this.#watchers.set(key, (entry = { last: UNSEEN, callbacks: new Set() }));
    const callback = () => onChange();
    entry.callbacks.add(callback);
    if (!this.#watch && !this.#closed) {
      this.#watch = new SecretWatch({
        api: this.#api, namespace: this.#namespace, secretName: this.#o.secretName, clock: this.#clock, logger: this.#o.logger,
        listTimeoutMs: this.#timeoutMs, onSecret: (secret) => this.#seen(secret),
        ...(this.#o.watchBackoffMs ? { backoffMs: this.#o.watchBackoffMs } : {}), ...(this.#o.random ? { random: this.#o.random } : {}),
      });
      this.#watch.start();
    }
    return () => {
      entry.callbacks.delete(callback);
      if (entry.callbacks.size === 0) this.#watchers.delete(key);
      if (this.#watchers.size === 0) {
        this.#watch?.stop();
        this.#watch = undefined;
      }
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watch?.stop();
    this.#watch = undefined;
    this.#watchers.clear();
    this.#api.close();
  }

  /** A state of the Secret from the watch: tell the watchers of each record that changed (claims are not changes). */
  #seen(secret: SecretObject | undefined): void {
    for (const [key, entry] of this.#watchers) {
      const value = secret?.data?.[key];
      if (entry.last === value) continue;
      entry.last = value;
      for (const callback of entry.callbacks) {
        try {
          callback();
        } catch (err) {
          this.#o.logger.warn('fleet store: a watcher of the Kubernetes store threw: %s', (err as Error).message);
        }
      }
    }
  }

  /** GET, decide on what was read, PUT with that read's resourceVersion; on a 409, all again. */
  #mutate<T>(operation: StoreOperation, decide: (data: Record<string, string>) => { result: T; write?: Record<string, string | null> }): Promise<T> {
    return this.#operation(operation, async (call) => {
      for (let attempt = 1; ; attempt++) {
        const secret = await this.#get(operation, call);
        const data = secret.data ?? {};
        const { result, write } = decide(data);
        if (!write) return result;
        const next: Record<string, string> = { ...data };
        for (const [k, v] of Object.entries(write)) {
          if (v === null) delete next[k];
          else next[k] = v;
        }
        const res = await this.#api.request('PUT', this.#path, { body: { ...secret, data: next }, ...call });
        if (res.status === 200) return result;
        if (res.status !== 409) throw this.#statusError(operation, 'update', res);
        if (attempt >= MAX_CONFLICTS) throw new FleetStoreError(operation, `${this.#what()} kept changing: ${attempt} writes in a row answered 409 Conflict`);
      }
    });
  }

  async #get(operation: StoreOperation, call: ApiCall): Promise<SecretObject> {
    const res = await this.#api.request('GET', this.#path, call);
    if (res.status !== 200) throw this.#statusError(operation, 'get', res);
    const secret = res.body as SecretObject | undefined;
    if (typeof secret?.metadata?.resourceVersion !== 'string') throw new FleetStoreError(operation, `${this.#what()}: the API server's answer is not a Secret`);
    return secret;
  }

  /** Runs one operation under its deadline, turning every failure into a FleetStoreError naming it. */
  async #operation<T>(operation: StoreOperation, run: (call: ApiCall) => Promise<T>): Promise<T> {
    if (this.#closed) throw new FleetStoreError(operation, 'the Kubernetes fleet store is closed');
    const controller = new AbortController();
    const deadlineAt = this.#clock.now() + this.#timeoutMs;
    const timer = this.#clock.setTimeout(() => controller.abort(), this.#timeoutMs);
    try {
      return await run({ signal: controller.signal, deadlineAt });
    } catch (err) {
      if (err instanceof FleetStoreError) throw err;
      if (controller.signal.aborted) {
        throw new FleetStoreError(operation, `the Kubernetes API server ${this.#api.origin} did not answer (${operation} on ${this.#what()}) within ${this.#timeoutMs} ms`, { cause: err });
      }
      const code = (err as NodeJS.ErrnoException).code;
      // A connection or TLS failure has a code; the rest (the token file) says itself what it is.
      if (code === undefined) throw new FleetStoreError(operation, `${operation} on ${this.#what()}: ${(err as Error).message}`, { cause: err });
      throw new FleetStoreError(operation, `the Kubernetes API server ${this.#api.origin} could not be reached (${operation} on ${this.#what()}): ${code}`, { cause: err });
    } finally {
      this.#clock.clearTimeout(timer);
    }
  }

  /** The message for an error answer: what the operator does about it, never a token. */
  #statusError(operation: StoreOperation, verb: string, { status, body, retryAfter }: ApiResponse): FleetStoreError {
    const rbac = `the sidecar's ServiceAccount needs get, list, watch and update on it by name (deploy/kubernetes/components/fleet-kubernetes: Role and RoleBinding)`;
    const said = printable(apiStatus(body)?.message);
    switch (status) {
      case 404:
        return new FleetStoreError(operation, `${this.#what()} not found: create it before the sidecars start (deploy/kubernetes/components/fleet-kubernetes/secret.yaml, empty), and ${rbac}`);
      case 403:
        return new FleetStoreError(operation, `${this.#what()}: ${verb} forbidden (403${said ? `: ${said}` : ''}); ${rbac}`);
      case 401:
        return new FleetStoreError(operation, `the Kubernetes API server refused the service-account token of ${this.#tokenFile} (401), also after reading the file again`);
      case 429:
        return new FleetStoreError(operation, `${this.#what()}: ${verb} answered 429 Too Many Requests${waitWords(retryAfter)}: the API server is overloaded, or its priority and fairness limits hold back this ServiceAccount's requests`);
      default:
        return new FleetStoreError(operation, `${this.#what()}: ${verb} answered ${status}${apiStatus(body)?.reason ? ` ${apiStatus(body)?.reason}` : ''}${said ? ` (${said})` : ''}`);
    }
  }

  #what(): string {
    return `Secret ${this.#namespace}/${this.#o.secretName}`;
  }
}

const UNSEEN = Symbol('unseen');

/** One operation's API calls: its abort signal and its deadline on the store's clock. */
interface ApiCall {
  signal: AbortSignal;
  deadlineAt: number;
}

/** Why a 429 was given up on: no Retry-After, a wait past the deadline, or too many waits. */
function waitWords(retryAfter: ApiResponse['retryAfter']): string {
  if (retryAfter?.ms === undefined) return ' with no Retry-After in whole seconds';
  if (retryAfter.waits >= MAX_RETRY_AFTER_WAITS) return ` after waiting ${retryAfter.waits} times as it asked`;
  return ` and asked to wait ${retryAfter.ms / 1000} s, past the operation's deadline`;
}

/** An API server's message, shortened and stripped of control characters, for a log line. */
function printable(message: string | undefined): string {
  return (message ?? '').replace(/[^\x20-\x7e]/g, '?').slice(0, 300);
}
