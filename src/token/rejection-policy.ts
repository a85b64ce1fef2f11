/**
 * What upstream 401s say about the token, judged from the token's own history: whether it had been
 * accepted, whether it was obtained because of a 401, how old it is. Pure: no timers, no I/O; the
 * token manager feeds it events and acts on its verdicts.
 *
 * - A token that had been accepted and is rejected young, while this process still holds it, was
 *   **superseded**: most likely another process minted a token with the same ApiKey (a vendor that
 *   keeps one token per key revokes the older one). Renewing at once is right; repeated, it is
 *   worth a warning.
 * - A token obtained because of a 401 and rejected before any request succeeded with it is a
 *   **fresh rejection**: renewing again will not help (`token.attach` presents the token wrongly,
 *   or the endpoint rejects for its own reasons). 401-triggered renewals slow down (1 s, 2 s, 4 s …
 *   60 s), and from the second in a row the sidecar says `token.attach` is suspect.
 * - Any request answered with something other than 401 clears both: the state never carries over
 *   from one episode to the next.
 */
export interface RejectedToken {
  generation: number;
  /** Monotonic ms the gentoken request was sent. */
  obtainedAt: number;
  lifetimeSeconds: number;
  /** True when it was obtained because of an upstream 401. */
  afterUnauthorized: boolean;
}

export type RejectionVerdict =
  /** Renew now (subject to the minimum interval). */
  | { kind: 'revoked' }
  /** Renew now; `count` superseded rejections within the window; `tripped` the first time the rule holds in an episode. */
  | { kind: 'superseded'; count: number; tripped: boolean }
  /** A fresh token rejected before it was ever accepted; `consecutive` in a row; `suspect` from the threshold on. */
  | { kind: 'fresh-rejected'; consecutive: number; suspect: boolean; enteredSuspect: boolean };

/** 401-triggered renewals are at least this far apart, doubling after each fresh rejection. */
export const MIN_RENEW_INTERVAL_MS = 1_000;
export const MAX_RENEW_INTERVAL_MS = 60_000;
/** Fresh rejections in a row before `token.attach` is named as the likely cause. */
export const ATTACH_SUSPECT_AFTER = 2;
/** Superseded rejections within the window that point at another holder of the key. */
export const SUPERSEDED_THRESHOLD = 3;
export const SUPERSEDED_WINDOW_MS = 10 * 60_000;
/** "Young": rejected before this fraction of its lifetime, long before any expiry. */
const YOUNG_FRACTION = 0.5;

export class RejectionPolicy {
  #acceptedGeneration = 0;
  #freshRejected = 0;
  #superseded: number[] = [];
  #supersededWarned = false;

  /** A request carrying `generation` got an answer other than 401. Cheap: called per response. */
  accepted(generation: number): void {
    if (generation <= this.#acceptedGeneration) return;
    this.#acceptedGeneration = generation;
    this.#freshRejected = 0;
  }

  /** The current token was rejected at monotonic `now`. */
  rejected(token: RejectedToken, now: number): RejectionVerdict {
    if (token.generation <= this.#acceptedGeneration) {
      const young = now - token.obtainedAt < token.lifetimeSeconds * 1000 * YOUNG_FRACTION;
      if (!young) return { kind: 'revoked' };
      this.#superseded = this.#superseded.filter((t) => now - t < SUPERSEDED_WINDOW_MS);
      this.#superseded.push(now);
      const count = this.#superseded.length;
      const holds = count >= SUPERSEDED_THRESHOLD;
      const tripped = holds && !this.#supersededWarned;
      // Warned once per episode: the rule must stop holding (quiet window) before it warns again.
      this.#supersededWarned = holds;
      return { kind: 'superseded', count, tripped };
    }
    if (!token.afterUnauthorized) return { kind: 'revoked' };
    this.#freshRejected++;
    const suspect = this.#freshRejected >= ATTACH_SUSPECT_AFTER;
    return { kind: 'fresh-rejected', consecutive: this.#freshRejected, suspect, enteredSuspect: this.#freshRejected === ATTACH_SUSPECT_AFTER };
  }

  /** The shortest time between two 401-triggered renewals now. */
  get renewIntervalMs(): number {
    return Math.min(MIN_RENEW_INTERVAL_MS * 2 ** Math.min(this.#freshRejected, 16), MAX_RENEW_INTERVAL_MS);
  }

  /** True while fresh tokens keep being rejected: `token.attach` is probably wrong. */
  get attachSuspect(): boolean {
    return this.#freshRejected >= ATTACH_SUSPECT_AFTER;
  }
}
