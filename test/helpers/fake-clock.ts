import type { Clock, TimerHandle } from '../../src/shared/clock.js';
import { clampDelay } from '../../src/shared/clock.js';

interface Timer { id: number; at: number; fn: () => void }

/**
 * A detached fake clock: time moves only when a test calls `advance`. Timers fire in order of
 * their due time; a timer scheduled by a firing timer fires in the same advance if it is due.
 */
export class FakeClock implements Clock {
  #now: number;
  #wallOffset: number;
  #timers: Timer[] = [];
  #nextId = 1;

  constructor(startMs = 1_000_000, wallStartMs = Date.UTC(2026, 10, 22, 12, 0, 0)) {
    this.#now = startMs;
    this.#wallOffset = wallStartMs - startMs;
  }

  now(): number {
    return this.#now;
  }

  wallNow(): number {
    return this.#now + this.#wallOffset;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = { id: this.#nextId++, at: this.#now + clampDelay(ms), fn };
    this.#timers.push(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle | undefined): void {
    this.#timers = this.#timers.filter((t) => t !== handle);
  }

  /** Number of pending timers. */
  get pending(): number {
    return this.#timers.length;
  }

  /** Due time (relative to now) of the earliest pending timer, or undefined. */
  nextDelay(): number | undefined {
    if (this.#timers.length === 0) return undefined;
    return Math.min(...this.#timers.map((t) => t.at)) - this.#now;
  }

  /** Moves time forward synchronously, firing due timers in order. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (let due = this.#takeDue(target); due; due = this.#takeDue(target)) due.fn();
    this.#now = target;
  }

  /**
   * Like `advance`, but lets promises and I/O settle after each fired timer, so async work a
   * timer starts (a token request) completes before later timers are considered.
   */
  async advanceAsync(ms: number, settle: () => Promise<void> = flush): Promise<void> {
    const target = this.#now + ms;
    await settle();
    for (let due = this.#takeDue(target); due; due = this.#takeDue(target)) {
      due.fn();
      await settle();
    }
    this.#now = target;
    await settle();
  }

  /** Removes and returns the earliest timer due by `target`, moving time to it. */
  #takeDue(target: number): Timer | undefined {
    const due = this.#timers.filter((t) => t.at <= target).sort((a, b) => a.at - b.at || a.id - b.id)[0];
    if (!due) return undefined;
    this.#timers = this.#timers.filter((t) => t !== due);
    this.#now = Math.max(this.#now, due.at);
    return due;
  }
}

/** Lets pending promise callbacks and one turn of I/O run. */
export async function flush(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
