/**
 * Time source injected into everything that schedules or measures. Tests pass a fake clock and
 * drive token timing without sleeping; production uses {@link systemClock}.
 */
export interface Clock {
  /** Monotonic milliseconds, for durations and deadlines (never jumps with wall-clock changes). */
  now(): number;
  /** Wall-clock milliseconds since the epoch, only for values shown to people or Prometheus. */
  wallNow(): number;
  setTimeout(fn: () => void, ms: number): TimerHandle;
  clearTimeout(handle: TimerHandle | undefined): void;
}

export type TimerHandle = { readonly __timer: unique symbol } | object;

/** Node fires timers longer than 2^31-1 ms after 1 ms (docs/traps.md T15), so every delay is clamped. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

export function clampDelay(ms: number): number {
  if (!Number.isFinite(ms) || ms < 0) return 0;
  return Math.min(ms, MAX_TIMER_MS);
}

/** The real clock. Timers are unref'd: a pending renewal alone must not keep the process alive. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, clampDelay(ms));
    t.unref();
    return t;
  },
  clearTimeout(handle) {
    if (handle) clearTimeout(handle as NodeJS.Timeout);
  },
};
