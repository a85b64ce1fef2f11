import { DeadlineQueue, type DeadlineEntry } from '../upstream/deadline-queue.js';
import type { Clock } from '../shared/clock.js';

/**
 * A minimum upload rate (docs/traps.md T36): once a request body has started, at least `minBytes`
 * must arrive within every window, or the upload is cut. Without it, uploads trickling a byte a
 * second hold pooled service connections for as long as the client likes (up to
 * `proxy.requestTimeoutMs`), and once they hold `proxy.maxSockets` every other client waits. A
 * per-source cap would not help the usual deployment, where every client is the local app on
 * 127.0.0.1. One shared DeadlineQueue: no timer per upload.
 */
export class UploadPaces {
  readonly #queue: DeadlineQueue;
  readonly #minBytes: number;

  /** `bytesPerSecond` 0 turns the check off. */
  constructor(readonly bytesPerSecond: number, readonly windowMs: number, clock: Clock) {
    this.#queue = new DeadlineQueue(windowMs, clock);
    this.#minBytes = Math.ceil((bytesPerSecond * windowMs) / 1000);
  }

  /** Starts watching one upload; `onSlow` runs once if a window passes below the rate. */
  watch(onSlow: () => void): UploadPace | undefined {
    return this.bytesPerSecond > 0 ? new UploadPace(this.#queue, this.#minBytes, onSlow) : undefined;
  }
}

export class UploadPace implements DeadlineEntry {
  deadlineAt = 0;
  deadlinePrev: DeadlineEntry | undefined = undefined;
  deadlineNext: DeadlineEntry | undefined = undefined;
  deadlineQueue: DeadlineQueue | undefined = undefined;
  #bytes = 0;

  constructor(readonly queue: DeadlineQueue, readonly minBytes: number, readonly onSlow: () => void) {
    queue.add(this);
  }

  /** Bytes arrived: a window that reached `minBytes` starts the next one. */
  progress(bytes: number): void {
    this.#bytes += bytes;
    if (this.#bytes < this.minBytes || this.deadlineQueue === undefined) return;
    this.#bytes = 0;
    this.queue.add(this);
  }

  /** The body is complete (or the request over): nothing more to watch. */
  done(): void {
    this.queue.remove(this);
  }

  expire(): void {
    this.onSlow();
  }
}
