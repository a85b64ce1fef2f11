import type { IncomingMessage } from 'node:http';
import { statSync } from 'node:fs';
import { Agent, request } from 'node:https';
import type { Clock } from '../shared/clock.js';
import type { ServiceAccountToken } from './service-account-token.js';

/** An API answer: its status and its JSON body (undefined when it was not JSON). */
export interface ApiResponse {
  readonly status: number;
  readonly body: unknown;
  /** For an answer that asked to wait and send again (429, a 5xx): how long, and how often it was waited already. */
  readonly retryAfter?: { ms: number | undefined; waits: number };
}

/** A Kubernetes `Status` object, as every error answer carries it (meta/v1 Status). */
export interface ApiStatus {
  readonly kind?: string;
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
}

/** A Secret is at most 1 MiB; a list of one is a little more. Anything larger is not ours. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** Waits as long as a Retry-After asks at most this often per request (client-go's default maxRetries). */
export const MAX_RETRY_AFTER_WAITS = 10;

/** The cluster CA: its PEM at start, and how to read its file again (kubelet replaces it on a CA rotation). */
export interface ClusterCa {
  readonly pem: string;
  readonly file: string;
  read(): string;
  /** Told when the file is read again after a failed verification, in words for the log. */
  onChange?(words: string): void;
}

/** A CA bundle is a few KiB; a larger file is not read again (the one read at open was checked). */
const MAX_CA_BYTES = 1024 * 1024;

/** How often the CA file is looked at without a failure (client-go reads its token file as often). */
const CA_RELOAD_MS = 60_000;

/** Node's codes for a server certificate the trusted CAs do not verify. */
const UNVERIFIED = new Set(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_SIGNATURE_FAILURE', 'CERT_UNTRUSTED']);

function agentFor(caPem: string): Agent {
  // The cluster CA alone, as client-go's in-cluster config trusts it: the API server's
  // certificate is never signed by a public CA, and nothing else should be able to answer.
  return new Agent({ keepAlive: true, ca: caPem, maxSockets: 16, rejectUnauthorized: true });
}

/**
 * Plain HTTPS to the Kubernetes API server, the in-cluster way: the cluster's CA (ca.crt of the
 * service-account volume) as the only trust anchor, the service account's bearer token, and a 401
 * answered by reading the token file again and sending once more (kubelet rotates a projected
 * token; docs/traps.md T91). No client library: the store makes four calls (GET, LIST and PUT of
 * one Secret, and a watch of it), each written from the API reference (test/fixtures/kubernetes/README.md).
 */
export class KubernetesApi {
  readonly origin: string;
  #agent: Agent;
  /** Agents of CAs no longer in use: what runs on them finishes there; closed with the API. */
  readonly #retired: Agent[] = [];
  #caPem: string;
  /** The CA file's inode, size and time when it was last read (undefined: read it at the next check). */
  #caSeen: string | undefined;
  #caCheckedAt: number;
  #closed = false;
  readonly #ca: ClusterCa;
  readonly #token: ServiceAccountToken;
  readonly #clock: Clock;

  constructor(server: URL, ca: ClusterCa, token: ServiceAccountToken, clock: Clock) {
    this.origin = server.origin;
    this.#ca = ca;
    this.#caPem = ca.pem;
    this.#token = token;
    this.#clock = clock;
    this.#agent = agentFor(ca.pem);
    this.#caCheckedAt = clock.now();
  }

  /**
   * One request; the body of the answer is read whole (bounded). `body` is sent as JSON. An answer
   * that asks to wait (`Retry-After` on a 429, which the API server's max-in-flight and
   * priority-and-fairness filters send before handling the request, or on a 5xx to a GET) is sent
   * again after the seconds it asks, as client-go does, while the wait ends before `deadlineAt`
   * (the injected clock's ms): else that answer is returned at once, its wait in `retryAfter`. A
   * PUT is repeated only after a 429: after a 5xx it may have been applied.
   */
  async request(method: 'GET' | 'PUT', path: string, options: { body?: unknown; signal: AbortSignal; deadlineAt?: number }): Promise<ApiResponse> {
    for (let waits = 0; ; waits++) {
      const res = await this.#authorized(method, path, options.body, options.signal);
      const status = res.statusCode ?? 0;
      const body = parseJson(await readBody(res));
      if (status !== 429 && (status < 500 || status > 599)) return { status, body };
      const ms = status === 429 || method === 'GET' ? retryAfterMs(res) : undefined;
      const fits = ms !== undefined && (options.deadlineAt === undefined || this.#clock.now() + ms < options.deadlineAt);
      if (!fits || waits >= MAX_RETRY_AFTER_WAITS || !(await this.#sleep(ms, options.signal))) return { status, body, retryAfter: { ms, waits } };
    }
  }

  /** Waits `ms` on the clock, or less when `signal` aborts first: true when the wait ran out. */
  #sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    const clock = this.#clock;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(false);
      const onAbort = () => {
        clock.clearTimeout(timer);
        resolve(false);
      };
      const timer = clock.setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * A streaming GET (a watch): for a 200, `onObject` gets each newline-delimited JSON object as
   * it arrives (after `onOpen`) and the promise settles when the server ends the stream; for any other status the
   * body is read whole and returned. Aborting `signal` ends the stream with an AbortError.
   */
  async stream(path: string, signal: AbortSignal, onObject: (value: unknown) => void, onOpen?: () => void): Promise<ApiResponse> {
    const res = await this.#authorized('GET', path, undefined, signal);
    if (res.statusCode !== 200) return { status: res.statusCode ?? 0, body: parseJson(await readBody(res)) };
    onOpen?.();
    let pending = '';
    for await (const chunk of res as AsyncIterable<Buffer>) {
      pending += chunk.toString('utf8');
      if (pending.length > MAX_BODY_BYTES) throw new Error('a watch event larger than 4 MiB');
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline).trim();
        pending = pending.slice(newline + 1);
        if (line === '') continue;
        const value = parseJson(line);
        if (value === undefined) throw new Error('the watch stream carried a line that is not JSON');
        onObject(value);
      }
    }
    // A connection cut mid-stream ends the iteration quietly: only `complete` tells it from the
    // server's own end of the watch.
    if (!res.complete) throw new Error('the watch stream was cut');
    return { status: 200, body: undefined };
  }

  /** Closes idle and open connections (watches included). */
  close(): void {
    this.#closed = true;
    for (const agent of [this.#agent, ...this.#retired]) agent.destroy();
  }

  /** Sends with the token held; on a 401, reads the token file again and sends once more with the new one. */
  async #authorized(method: string, path: string, body: unknown, signal: AbortSignal): Promise<IncomingMessage> {
    // The CA file is looked at every minute too, not only when a certificate fails: a rotation that
    // ends by dropping the old CA from the file must end its trust here as well.
    if (this.#clock.now() - this.#caCheckedAt >= CA_RELOAD_MS && this.#reloadCa()) {
      this.#ca.onChange?.(`the cluster CA ${this.#ca.file} changed: connecting with it`);
    }
    const token = await this.#token.get();
    const res = await this.#sendOnce(method, path, token, body, signal);
    if (res.statusCode !== 401) return res;
    const fresh = await this.#token.get(true);
    if (fresh === token) return res;
    res.resume();
    return this.#sendOnce(method, path, fresh, body, signal);
  }

  /**
   * A request that failed on a kept-alive connection the server had just closed, before any answer,
   * is sent once more on a new one (docs/traps.md T9). Safe for every call the store makes: a GET
   * reads, and a PUT repeated after it was applied carries a resourceVersion that is now stale, so
   * it answers 409 and the store reads again.
   */
  async #sendOnce(method: string, path: string, token: string, body: unknown, signal: AbortSignal): Promise<IncomingMessage> {
    // Each way of failing before any answer is given one more try: a reused connection closed
    // under the request, and a certificate the CA no longer verifies (both at once after a rotation).
    let reused = false;
    let rotated = false;
    for (;;) {
      const agent = this.#agent;
      try {
        return await this.#send(agent, method, path, token, body, signal);
      } catch (err) {
        if (signal.aborted) throw err;
        if (!reused && (err as { reusedSocket?: boolean }).reusedSocket) reused = true;
        else if (!rotated && this.#caChanged(err, agent)) rotated = true;
        else throw err;
      }
    }
  }

  /**
   * After a certificate the CA in use does not verify: whether there is another CA now (a cluster
   * CA rotation: kubelet updates the projected ca.crt, and the API server moves to a certificate
   * the new CA signed), in which case the request goes out again with it. Another request that
   * failed the same way may have changed it already.
   */
  #caChanged(err: unknown, used: Agent): boolean {
    if (this.#closed || !UNVERIFIED.has(String((err as NodeJS.ErrnoException).code))) return false;
    if (used !== this.#agent) return true;
    if (!this.#reloadCa()) return false;
    this.#ca.onChange?.(`the API server's certificate did not verify, and the cluster CA ${this.#ca.file} changed: connecting with the new one`);
    return true;
  }

  /**
   * Reads the CA file again when it changed since it was last read (its inode, size or time: kubelet
   * replaces a projected file, so a cheap stat tells); true when it holds another CA, which new
   * requests then use. A file that cannot be read, or that is not a CA, changes nothing.
   */
  #reloadCa(): boolean {
    this.#caCheckedAt = this.#clock.now();
    if (this.#closed) return false;
    let seen: string;
    try {
      const st = statSync(this.#ca.file);
      if (!st.isFile() || st.size > MAX_CA_BYTES) return false;
      seen = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return false;
    }
    if (seen === this.#caSeen) return false;
    this.#caSeen = seen;
    let pem: string;
    try {
      pem = this.#ca.read();
    } catch {
      return false; // a failed request reports its own error, with its code
    }
    if (pem === this.#caPem) return false;
    this.#caPem = pem;
    this.#retired.push(this.#agent);
    this.#agent = agentFor(pem);
    return true;
  }

  #send(agent: Agent, method: string, path: string, token: string, body: unknown, signal: AbortSignal): Promise<IncomingMessage> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(abortError());
      let response: IncomingMessage | undefined;
      const req = request(new URL(path, this.origin), {
        method,
        agent,
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${token}`,
          ...(payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {}),
        },
      }, (res) => resolve((response = res)));
      // Not request()'s own `signal` option: it stays attached after the answer is complete, and an
      // abort then destroys the socket the keep-alive agent already took back for the next request,
      // an 'error' with no listener that ends the process (measured on Node 24.21). A complete
      // answer is left alone: what it holds is read from its buffer.
      const onAbort = () => {
        if (!response?.complete) req.destroy(abortError());
      };
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('close', () => signal.removeEventListener('abort', onAbort));
      req.on('error', (err) => reject(Object.assign(err, { reusedSocket: req.reusedSocket && response === undefined })));
      req.end(payload);
    });
  }
}

/**
 * The wait an answer asks for, in ms: `Retry-After` as whole seconds (the form the API server
 * sends; client-go's `retryAfterSeconds` reads only that form too), else none.
 */
function retryAfterMs(res: IncomingMessage): number | undefined {
  const value = res.headers['retry-after'];
  if (typeof value !== 'string' || !/^\d{1,4}$/.test(value.trim())) return undefined;
  return Number(value.trim()) * 1000;
}

function abortError(): Error {
  return Object.assign(new Error('the request was aborted'), { name: 'AbortError', code: 'ABORT_ERR' });
}

async function readBody(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) {
      res.destroy();
      throw new Error('an answer larger than 4 MiB');
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The Status object of an error answer, or undefined when the body is not one. */
export function apiStatus(body: unknown): ApiStatus | undefined {
  if (typeof body !== 'object' || body === null || (body as ApiStatus).kind !== 'Status') return undefined;
  return body as ApiStatus;
}
