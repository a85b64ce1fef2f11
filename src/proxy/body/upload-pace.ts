import { DeadlineQueue, type DeadlineEntry } from '../../upstream/deadline-queue.js';
import type { Clock } from '../../shared/clock.js';

/** How often each upload's pace is checked. */
export const UPLOAD_CHECK_MS = 1000;
/** How far, in time at the minimum rate, an upload may fall behind before it is cut. */
export const UPLOAD_GRACE_MS = 10_000;

/**
 * A minimum upload rate (docs/traps.md T36): once a request body is being read, it may never fall
 * more than `graceMs` behind `bytesPerSecond`. Each upload holds a credit of bytes, full at the
 * start (`graceMs` worth at the rate); every check takes away what the rate asks for the time
 * since the last one and adds what arrived, capped at the full credit, so early bytes cannot pay
 * for a later trickle. Below zero the upload is cut. Checked every second rather than
 * by fixed windows: bytes past a window's quota are not thrown away (a steady client just above
 * the rate passes whatever its chunk size), and a stalled one is cut within a second of its
 * credit running out. Counting a chunk is one addition; one shared DeadlineQueue ticks all the
 * uploads, no timer per upload.
 */
export class UploadPaces {
  readonly #queue: DeadlineQueue;
  readonly #clock: Clock;
  /** The full credit, bytes. */
  readonly #depth: number;

  /** `bytesPerSecond` 0 turns the check off. */
  constructor(readonly bytesPerSecond: number, clock: Clock, graceMs = UPLOAD_GRACE_MS, checkMs = UPLOAD_CHECK_MS) {
    this.#queue = new DeadlineQueue(checkMs, clock);
    this.#clock = clock;
    this.#depth = (bytesPerSecond * graceMs) / 1000;
  }

  /** Starts watching one upload; `onSlow` runs once if it falls behind. */
  watch(onSlow: () => void): UploadPace | undefined {
    return this.bytesPerSecond > 0 ? new UploadPace(this.#queue, this.#clock, this.bytesPerSecond / 1000, this.#depth, onSlow) : undefined;
  }
}

export class UploadPace implements DeadlineEntry {
  deadlineAt = 0;
  deadlinePrev: DeadlineEntry | undefined = undefined;
  deadlineNext: DeadlineEntry | undefined = undefined;
  deadlineQueue: DeadlineQueue | undefined = undefined;
  #arrived = 0;
  #credit: number;
  #checkedAt: number;

  constructor(
    readonly queue: DeadlineQueue, readonly clock: Clock, readonly bytesPerMs: number, readonly depth: number,
    readonly onSlow: () => void,
  ) {
    this.#credit = depth;
    this.#checkedAt = clock.now();
    queue.add(this);
  }

  /** Bytes arrived. */
  progress(bytes: number): void {
    this.#arrived += bytes;
  }

  /** The body is complete (or the request over): nothing more to watch. Idempotent. */
  done(): void {
    this.queue.remove(this);
  }

  /** A check: the credit is settled, and the upload cut or watched on. */
  expire(): void {
    const now = this.clock.now();
    this.#credit = Math.min(this.depth, this.#credit + this.#arrived - (now - this.#checkedAt) * this.bytesPerMs);
    this.#arrived = 0;
    this.#checkedAt = now;
    if (this.#credit < 0) this.onSlow();
    else this.queue.add(this);
  }
}
