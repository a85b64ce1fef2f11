import { FileRefusedError, MAX_SECRET_FILE_BYTES, readBoundedFile } from '../shared/bounded-file.js';
import type { Clock } from '../shared/clock.js';

/** Where kubelet projects the pod's service-account token (the in-cluster default of every client). */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/**
 * How long a token read from the file is used before the file is read again. client-go re-reads
 * every minute (NewCachedFileTokenSource, k8s.io/client-go/transport/token_source.go): kubelet
 * replaces a projected token once it is older than 80 % of its life (at least 10 minutes, an hour
 * by default), so a minute-old copy is always still valid (docs/traps.md T91).
 */
export const TOKEN_RELOAD_MS = 60_000;

/**
 * The bearer token of the pod's service account, read from its projected file and read again
 * when it may have rotated: after `reloadMs`, and at once when the API server answered 401
 * (kubernetes.io "Configure Service Accounts for Pods": "The application is responsible for
 * reloading the token when it rotates"). Never cached for the process's life, never logged.
 */
export class ServiceAccountToken {
  readonly #file: string;
  readonly #clock: Clock;
  readonly #reloadMs: number;
  #token: string | undefined;
  #readAt = 0;
  #reading: Promise<string> | undefined;

  constructor(file: string, clock: Clock, reloadMs = TOKEN_RELOAD_MS) {
    this.#file = file;
    this.#clock = clock;
    this.#reloadMs = reloadMs;
  }

  /** The file the token comes from, for messages. */
  get file(): string {
    return this.#file;
  }

  /** The current token; `fresh` reads the file again whatever the age of the copy held. */
  async get(fresh = false): Promise<string> {
    if (!fresh && this.#token !== undefined && this.#clock.now() - this.#readAt < this.#reloadMs) return this.#token;
    // One read at a time: concurrent operations that all saw a 401 share it.
    this.#reading ??= this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<string> {
    let text: string;
    try {
      text = await readBoundedFile(this.#file, MAX_SECRET_FILE_BYTES);
    } catch (err) {
      const why = err instanceof FileRefusedError ? err.reason : `could not be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
      throw new Error(`the service-account token file ${this.#file} ${why}: is automountServiceAccountToken on, or the token projected into this container?`);
    }
    const token = text.trim();
    if (token === '' || /[^\x21-\x7e]/.test(token)) throw new Error(`the service-account token file ${this.#file} holds no usable token`);
    this.#token = token;
    this.#readAt = this.#clock.now();
    return token;
  }
}
