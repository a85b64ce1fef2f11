import { MAX_TIMER_MS, type Clock, type TimerHandle } from '../../shared/clock.js';

/**
 * The token loop's one timer: the next gentoken attempt (start, renewal, retry, a held-back call)
 * is always this timer, so "nothing scheduled" and "overdue" can be read off it (liveness). Arms for
 * a monotonic time, re-arming in steps no timer can overflow (docs/traps.md T15).
 */
export class LoopTimer {
  readonly #clock: Clock;
  #timer: TimerHandle | undefined;
  #at: number | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Monotonic ms the armed timer is due at; undefined when none is armed. */
  get dueAt(): number | undefined {
    return this.#at;
  }

  /** Replaces whatever was armed with `fn` at monotonic time `at`. */
  arm(at: number, fn: () => void): void {
    this.cancel();
    this.#at = at;
    const tick = () => {
      const remaining = at - this.#clock.now();
      if (remaining > 0) {
        this.#timer = this.#clock.setTimeout(tick, Math.min(remaining, MAX_TIMER_MS));
        return;
      }
      this.#timer = undefined;
      this.#at = undefined;
      fn();
    };
    this.#timer = this.#clock.setTimeout(tick, Math.min(Math.max(at - this.#clock.now(), 0), MAX_TIMER_MS));
  }

  cancel(): void {
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#at = undefined;
  }
}
