import type { ServerResponse } from 'node:http';
import type { DeadlineEntry, DeadlineQueue } from './deadline-queue.js';
import type { ClientGone, UpstreamResponse } from './engine.js';
import type { UpstreamBody } from './upstream-body.js';
import type { Clock } from '../shared/clock.js';
import type { ConnectionAware, PooledConnection } from './undici-connections.js';
import { parseHeaders } from './undici-core.js';
import { markStaleConnectionFailure } from './upstream-retry.js';

/** Where body chunks go once the caller has decided: the client response, or a buffer. */
interface Sink {
  /** false: stop the upstream until `resume` is called. */
  data(chunk: Buffer): boolean;
  end(last?: Buffer): void;
  error(err: Error): void;
}

/** Chunks kept while nobody reads yet; beyond this the upstream is paused. */
const PENDING_HIGH_WATER = 64 * 1024;

/** The engine's shared deadlines (see deadline-queue.ts): no timer per request. */
export interface ExchangeDeadlines {
  /** From dispatch to final response headers: pool queue, connect and the service's answer. */
  headers: DeadlineQueue;
  /**
   * Longest pause of a response whose reader (the client) stopped reading. undici stops its
   * body timeout while the consumer is paused, and Node's server has no response timeout, so
   * without this a client that never reads holds an upstream connection for ever.
   */
  paused: DeadlineQueue;
}

/** What the proxy engine's exchanges report about the connections they ran on. */
export interface ConnectionReports {
  clock: Clock;
  /** A reused connection idle for `idleMs` failed before any response byte (the keep-alive race). */
  staleAfterIdle(idleMs: number): void;
}

/**
 * One request on undici's dispatcher (its handler interface) that is also the response body.
 * Instead of undici's `request()` API (a BodyReadable, an AsyncResource and signal bookkeeping
 * per call, then pipe() into the client), chunks go straight into the client response with
 * back-pressure; a small answer that arrived whole goes out with a single `res.end(chunk)`.
 */
export class UndiciExchange implements UpstreamBody, DeadlineEntry, ConnectionAware {
  #resolve: ((response: UpstreamResponse) => void) | undefined;
  #reject: ((err: Error) => void) | undefined;
  readonly #signal: ClientGone;
  readonly #deadlines: ExchangeDeadlines | undefined;
  readonly #reports: ConnectionReports | undefined;
  /** Set by the pool (undici-connections.ts) when a Client takes the request. */
  connection: PooledConnection | undefined = undefined;
  /** How long the connection had been idle when this request was written; -1: a new connection. */
  #idleMs = -1;
  /** Clock ms when the request was fully written; -1 until then. */
  #sentAt = -1;
  /** An interim (1xx) answer came: the service has the request, so a failure now is no race. */
  #interim = false;
  #abort: ((reason: Error) => void) | undefined;
  /** Why the exchange ended before undici connected it: aborted as soon as it does. */
  #failed: Error | undefined;
  #resume: (() => void) | undefined;
  #sink: Sink | undefined;
  #pending: Buffer[] | undefined;
  #pendingBytes = 0;
  #paused = false;
  #done = false;
  #error: Error | undefined;
  // Owned by the DeadlineQueue this exchange is in (headers, then paused while the client lags).
  deadlineAt = 0;
  deadlinePrev: DeadlineEntry | undefined = undefined;
  deadlineNext: DeadlineEntry | undefined = undefined;
  deadlineQueue: DeadlineQueue | undefined = undefined;

  /**
   * Starts the header deadline, so create it when the request is handed to the dispatcher.
   * Without `deadlines` (the token client, which aborts through `signal` on its own deadline)
   * only undici's own timeouts apply.
   */
  constructor(signal: ClientGone, resolve: (response: UpstreamResponse) => void, reject: (err: Error) => void, deadlines?: ExchangeDeadlines, reports?: ConnectionReports) {
    this.#signal = signal;
    this.#deadlines = deadlines;
    this.#reports = reports;
    this.#resolve = resolve;
    this.#reject = reject;
    signal.onAbort(this.#onClientGone);
    deadlines?.headers.add(this);
  }

  // --- undici's dispatch handler ---

  onConnect(abort: (reason: Error) => void): void {
    // Thrown, not abort()ed: undici then fails the request without touching the connection it was
    // handed, which abort() would destroy (a fresh TLS handshake per expired request under load).
    if (this.#signal.aborted) throw clientAborted();
    if (this.#failed) throw this.#failed;
    this.#abort = abort;
    const connection = this.connection;
    if (connection && connection.responses > 0 && this.#reports) this.#idleMs = this.#reports.clock.now() - connection.idleSince;
  }

  /**
   * The header deadline restarts whenever the streamed request body makes progress (the body's
   * own report, see StreamedBody) and once the request is sent: a slow upload is not the
   * service's delay.
   */
  bodyProgress(): void {
    if (this.#reject) this.#deadlines?.headers.add(this);
  }

  onRequestSent(): void {
    if (this.#reports) this.#sentAt = this.#reports.clock.now();
    if (this.#reject) this.#deadlines?.headers.add(this);
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // Interim answers (100, 102, 103 Early Hints) are not the response: wait for the final one.
    if (status < 200) {
      this.#interim = true;
      return true;
    }
    this.#deadlines?.headers.remove(this);
    this.#resume = resume;
    const resolve = this.#resolve!;
    this.#resolve = this.#reject = undefined;
    resolve({ status, headers: parseHeaders(rawHeaders), body: this });
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#sink) {
      if (this.#sink.data(chunk)) return true;
    } else {
      (this.#pending ??= []).push(chunk);
      this.#pendingBytes += chunk.length;
      if (this.#pendingBytes < PENDING_HIGH_WATER) return true;
    }
    this.#paused = true;
    this.#deadlines?.paused.add(this);
    return false;
  }

  onComplete(): void {
    this.#done = true;
    const connection = this.connection;
    if (connection && this.#reports) {
      connection.responses++;
      connection.idleSince = this.#reports.clock.now();
    }
    this.deadlineQueue?.remove(this);
    this.#signal.offAbort(this.#onClientGone);
    this.#sink?.end();
  }

  onError(err: Error): void {
    this.deadlineQueue?.remove(this);
    this.#signal.offAbort(this.#onClientGone);
    if (this.#reject) {
      const reject = this.#reject;
      this.#resolve = this.#reject = undefined;
      // Before any response byte on a connection that had carried one: the keep-alive race.
      if (this.#idleMs >= 0 && !this.#interim) {
        const reports = this.#reports!;
        const afterSent = this.#sentAt < 0 ? -1 : reports.clock.now() - this.#sentAt;
        if (markStaleConnectionFailure(err, afterSent)) reports.staleAfterIdle(this.#idleMs);
      }
      reject(err);
      return;
    }
    this.#error = err;
    this.#sink?.error(err);
  }

  // --- the response body ---

  pipeTo(res: ServerResponse): void {
    let awaitingDrain = false;
    const drained = () => {
      awaitingDrain = false;
      this.#resumeUpstream();
    };
    this.#attach({
      data: (chunk) => {
        if (res.write(chunk)) return true;
        // One listener per full buffer: queued chunks flushed after the first `false` must not
        // each add one (they would pile up and each resume the upstream on the next drain).
        if (!awaitingDrain) {
          awaitingDrain = true;
          res.once('drain', drained);
        }
        return false;
      },
      end: (last) => void res.end(last),
      error: () => void res.destroy(),
    });
  }

  readAll(limit: number): Promise<Buffer | undefined> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const data = (chunk: Buffer) => {
        size += chunk.length;
        if (size > limit) {
          resolve(undefined);
          this.destroy();
          return false;
        }
        chunks.push(chunk);
        return true;
      };
      this.#attach({
        data,
        end: (last) => {
          if (last && !data(last)) return;
          resolve(Buffer.concat(chunks, size));
        },
        error: reject,
      });
    });
  }

  destroy(): void {
    if (this.#done || this.#error) return;
    this.#abortUpstream(Object.assign(new Error('response body discarded'), { code: 'UND_ERR_ABORTED' }));
  }

  #attach(sink: Sink): void {
    const pending = this.#pending;
    this.#pending = undefined;
    this.#pendingBytes = 0;
    this.#sink = sink;
    if (this.#error) return sink.error(this.#error);
    if (this.#done) {
      const last = pending?.pop();
      if (pending) for (const chunk of pending) sink.data(chunk);
      return sink.end(last);
    }
    let more = true;
    if (pending) for (const chunk of pending) more = sink.data(chunk);
    if (more && this.#paused) this.#resumeUpstream();
  }

  readonly #resumeUpstream = (): void => {
    if (!this.#paused) return;
    this.#paused = false;
    this.#deadlines?.paused.remove(this);
    this.#resume?.();
  };

  readonly #onClientGone = (): void => {
    if (this.#abort) return this.#abortUpstream(clientAborted());
    // Still queued or connecting: nothing to abort yet (onConnect checks the signal), but the
    // caller is answered now rather than after the connect timeout.
    this.deadlineQueue?.remove(this);
    const reject = this.#reject;
    this.#resolve = this.#reject = undefined;
    reject?.(clientAborted());
  };

  /** A deadline passed (DeadlineQueue): no final headers in time, or a client that stopped reading. */
  expire(): void {
    if (this.#reject) {
      const err = upstreamTimeout();
      const reject = this.#reject;
      this.#resolve = this.#reject = undefined;
      this.#signal.offAbort(this.#onClientGone);
      // Still in the pool's queue or connecting: undici has nothing to abort before onConnect.
      if (this.#abort) this.#abortUpstream(err);
      else this.#failed = err;
      reject(err);
    } else if (this.#paused && !this.#done && !this.#error) {
      // Cuts the client response too (sink.error via onError): it cannot be completed any more.
      this.#abortUpstream(Object.assign(new Error('the client stopped reading the response'), { code: 'SIDECAR_ERR_CLIENT_STALLED' }));
    }
  }

  #abortUpstream(reason: Error): void {
    this.#abort?.(reason);
  }
}

/** No final response headers within the deadline (answered with a 504, see upstream-error.ts). */
function upstreamTimeout(): Error {
  return Object.assign(new Error('upstream response headers timed out'), { code: 'SIDECAR_ERR_UPSTREAM_TIMEOUT' });
}

/** The error a request fails with when its client went away. */
export function clientAborted(): Error {
  return Object.assign(new Error('client aborted'), { code: 'UND_ERR_ABORTED' });
}
