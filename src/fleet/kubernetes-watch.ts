import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Logger } from '../observability/logger.js';
import { apiStatus, type KubernetesApi } from './kubernetes-api.js';

/** The parts of a Secret the store reads. */
export interface SecretObject {
  metadata: { name?: string; resourceVersion?: string } & Record<string, unknown>;
  data?: Record<string, string> | null;
  [field: string]: unknown;
}

export interface SecretWatchOptions {
  api: KubernetesApi;
  namespace: string;
  secretName: string;
  clock: Clock;
  logger: Logger;
  /** Every state of the Secret seen (undefined: deleted), from the list and from each event. */
  onSecret: (secret: SecretObject | undefined) => void;
  /** Deadline of the list request, ms. */
  listTimeoutMs: number;
  /** Reconnection backoff after a failure: doubles from `min` to `max`, with ±20 % jitter. */
  backoffMs?: { min: number; max: number };
  random?: () => number;
}

const MIN_WATCH_INTERVAL_MS = 1000;

type WatchEvent = { type?: string; object?: unknown };

/**
 * The change feed of one Secret, as the API concepts page prescribes (kubernetes.io,
 * "Efficient detection of changes"; client-go's Reflector does the same): LIST it (with a
 * `metadata.name` field selector, which is what RBAC's `resourceNames` requires of a list or a
 * watch) for the state and the collection's resourceVersion, then WATCH from that resourceVersion;
 * when a watch ends, watch again from the last resourceVersion seen; when the server answers
 * `410 Gone` (an HTTP 410, or an ERROR event whose Status has code 410: the kube-apiserver's watch
 * cache sends the latter) the history is gone, so LIST again and watch from the new list's
 * resourceVersion, never from the old one or from the Secret's own (docs/traps.md T90).
 * Other failures: reconnect with backoff. Bookmarks (allowWatchBookmarks) only move the resourceVersion.
 */
export class SecretWatch {
  readonly #o: SecretWatchOptions;
  #resourceVersion: string | undefined;
  #stopped = false;
  #failures = 0;
  #abort: AbortController | undefined;
  #timer: TimerHandle | undefined;
  #wake: (() => void) | undefined;
  #lastStart = -Infinity;

  constructor(options: SecretWatchOptions) {
    this.#o = options;
  }

  start(): void {
    void this.#run();
  }

  stop(): void {
    this.#stopped = true;
    this.#abort?.abort();
    this.#o.clock.clearTimeout(this.#timer);
    this.#wake?.();
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      try {
        if (this.#resourceVersion === undefined) await this.#list();
        if (this.#stopped) return;
        // At most one watch request a second: a server that ends every watch at once is not
        // asked again in a tight loop.
        const wait = this.#lastStart + MIN_WATCH_INTERVAL_MS - this.#o.clock.now();
        if (wait > 0) await this.#sleep(wait);
        if (this.#stopped) return;
        this.#lastStart = this.#o.clock.now();
        if ((await this.#watchOnce()) === 'expired') this.#resourceVersion = undefined;
      } catch (err) {
        if (this.#stopped) return;
        this.#abort?.abort();
        this.#failures++;
        const delay = this.#backoff();
        this.#o.logger[this.#failures === 1 ? 'warn' : 'debug']('fleet store: the watch of Secret %s/%s failed (%s); again in %d ms (peers\' changes are seen by polling meanwhile)',
          this.#o.namespace, this.#o.secretName, (err as Error).message, delay);
        // After a failure the history may be gone too: start again from a list.
        this.#resourceVersion = undefined;
        await this.#sleep(delay);
      }
    }
  }

  async #list(): Promise<void> {
    const { namespace, secretName } = this.#o;
    const signal = this.#deadline(this.#o.listTimeoutMs);
    const res = await this.#o.api.request('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets?fieldSelector=${encodeURIComponent(`metadata.name=${secretName}`)}`, { signal });
    if (res.status !== 200) throw new Error(`list answered ${res.status}${reasonOf(res.body)}`);
    const list = res.body as { metadata?: { resourceVersion?: string }; items?: SecretObject[] } | undefined;
    const version = list?.metadata?.resourceVersion;
    if (typeof version !== 'string' || version === '') throw new Error('the list carried no resourceVersion');
    this.#resourceVersion = version;
    this.#o.onSecret(list?.items?.find((s) => s.metadata?.name === secretName));
  }

  /** One watch request, until the server ends it: 'ended' (watch again from the last version) or 'expired' (list first). */
  async #watchOnce(): Promise<'ended' | 'expired'> {
    const { namespace, secretName, random = Math.random } = this.#o;
    // As client-go's Reflector: the server ends the watch after 5 to 10 minutes, spreading the
    // replicas' reconnections; the client-side deadline only catches a connection that went silent.
    const timeoutSeconds = 300 + Math.floor(random() * 300);
    const signal = this.#deadline(timeoutSeconds * 1000 + 60_000);
    // The answer's headers come within the list's deadline, or the connection is given up: an API
    // server that accepts and never answers must not hold the feed for the watch's whole timeout.
    const controller = this.#abort!;
    const headers = this.#o.clock.setTimeout(() => controller.abort(), this.#o.listTimeoutMs);
    signal.addEventListener('abort', () => this.#o.clock.clearTimeout(headers), { once: true });
    const query = `watch=1&fieldSelector=${encodeURIComponent(`metadata.name=${secretName}`)}&resourceVersion=${encodeURIComponent(this.#resourceVersion ?? '')}&allowWatchBookmarks=true&timeoutSeconds=${timeoutSeconds}`;
    let expired = false;
    const res = await this.#o.api.stream(`/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets?${query}`, signal, (value) => {
      const event = value as WatchEvent;
      if (expired) return;
      if (event.type === 'ERROR') {
        const status = apiStatus(event.object);
        if (status?.code === 410) {
          // The server ends the stream after an ERROR event; the abort is for one that does not.
          expired = true;
          this.#abort?.abort();
          return;
        }
        throw new Error(`the watch sent an error event${reasonOf(event.object)}`);
      }
      const object = event.object as SecretObject | undefined;
      const version = object?.metadata?.resourceVersion;
      if (typeof version === 'string' && version !== '') this.#resourceVersion = version;
      if (event.type === 'ADDED' || event.type === 'MODIFIED') this.#o.onSecret(object);
      else if (event.type === 'DELETED') this.#o.onSecret(undefined);
    }, () => {
      this.#o.clock.clearTimeout(headers);
      if (this.#failures > 0) this.#o.logger.info('fleet store: the watch of Secret %s/%s works again', namespace, secretName);
      this.#failures = 0;
    }).catch((err: unknown) => {
      if (expired) return { status: 410, body: undefined };
      throw err;
    });
    if (expired || res.status === 410) return 'expired';
    if (res.status !== 200) throw new Error(`watch answered ${res.status}${reasonOf(res.body)}`);
    return 'ended';
  }

  /** An AbortSignal that fires after `ms` (or at stop()), replacing the previous one. */
  #deadline(ms: number): AbortSignal {
    const controller = new AbortController();
    this.#abort = controller;
    const timer = this.#o.clock.setTimeout(() => controller.abort(), ms);
    controller.signal.addEventListener('abort', () => this.#o.clock.clearTimeout(timer), { once: true });
    return controller.signal;
  }

  #backoff(): number {
    const { min, max } = this.#o.backoffMs ?? { min: 500, max: 30_000 };
    const base = Math.min(max, min * 2 ** Math.min(this.#failures - 1, 20));
    return Math.round(base * (0.8 + 0.4 * (this.#o.random ?? Math.random)()));
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
      this.#timer = this.#o.clock.setTimeout(resolve, ms);
    });
  }
}

function reasonOf(body: unknown): string {
  const status = apiStatus(body);
  return status?.reason ? ` ${status.reason}` : '';
}
