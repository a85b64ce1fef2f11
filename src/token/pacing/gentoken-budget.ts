/**
 * A hard ceiling on gentoken calls: at most `perMinute` in any sliding 60-second window, whatever
 * started them (start, renewal, retry, a service 401, a rotation). Pure: time comes from the
 * caller (monotonic ms), so tests drive it on a fake clock.
 */
export interface GentokenBudget {
  /** Ms to wait before a call is allowed at `now`; 0 means allowed now (the call is not yet counted). */
  waitMs(now: number): number;
  /** Counts a call made at `now`. */
  take(now: number): void;
  /** Calls still allowed in the window at `now`. */
  remaining(now: number): number;
}

const WINDOW_MS = 60_000;

/** Creates a sliding-window budget of `perMinute` calls (an integer ≥ 1). */
export function createGentokenBudget(perMinute: number): GentokenBudget {
  if (!(Number.isInteger(perMinute) && perMinute >= 1)) throw new RangeError('perMinute must be an integer >= 1');
  // Times of the calls inside the window, oldest first; never longer than perMinute.
  const calls: number[] = [];
  const prune = (now: number) => {
    while (calls.length > 0 && calls[0]! <= now - WINDOW_MS) calls.shift();
  };
  return {
    waitMs(now) {
      prune(now);
      return calls.length < perMinute ? 0 : calls[0]! + WINDOW_MS - now;
    },
    take(now) {
      prune(now);
      calls.push(now);
      if (calls.length > perMinute) calls.shift();
    },
    remaining(now) {
      prune(now);
      return perMinute - calls.length;
    },
  };
}
