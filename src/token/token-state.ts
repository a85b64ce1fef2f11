import type { GentokenCause } from '../observability/metrics.js';
import { fingerprint } from '../shared/secrets.js';
import type { AuthResult, Credentials } from './token-client.js';

/** One obtained token and what it was obtained with. Immutable; replaced on every renewal. */
export interface TokenSnapshot {
  readonly value: string;
  /** Grows by one with every token; an upstream 401 names the generation it carried. */
  readonly generation: number;
  readonly fingerprint: string;
  /** The ApiKey the token was obtained with: attach this one, not whatever the store holds now. */
  readonly apiKey: string;
  readonly rkObjectId?: string;
  /** Monotonic ms when the gentoken request was sent (the lifetime counts from here). */
  readonly obtainedAt: number;
  readonly obtainedAtWall: number;
  /** Monotonic ms: obtainedAt + effective lifetime. */
  readonly expiresAt: number;
  /** Effective lifetime: min(aliveSecondsTtl, maxLifetimeSeconds). */
  readonly lifetimeSeconds: number;
}

/** The last failed gentoken attempt, kept until one succeeds. */
export interface RefreshFailure {
  cause: GentokenCause;
  /** The failure's own secret-free words (TLS detail, HTTP status); may be empty. */
  detail: string;
  /** Wall-clock ms of the latest failure, and of the first in this run of failures. */
  atWall: number;
  sinceWall: number;
  /** Failed attempts in a row. */
  count: number;
}

/** A token that had worked was rejected long before expiry and the renewal helped: another holder of the key? */
export interface SupersededRecord {
  /** Wall-clock ms of the latest such rejection. */
  lastAtWall: number;
  /** Such rejections within the judging window, at the latest one. */
  inWindow: number;
  /** True while the count holds the rule (another holder is likely): the warning is shown. */
  holds: boolean;
  /** Since the start. */
  total: number;
}

/** A token is unusable within min(5 s, 10 % of its lifetime) of expiry: requests take time too. */
const MAX_MARGIN_MS = 5_000;
const MARGIN_FRACTION = 0.1;

/**
 * The token's state: the token held, whether it is usable (inside its margin, not marked bad),
 * the last refresh failure and the superseded record. No timers and no I/O: the manager changes it,
 * the view (token-view.ts) reads it. Time comes from the caller.
 */
export class TokenState {
  #token: TokenSnapshot | undefined;
  /** expiresAt minus the margin, precomputed so usable() only compares numbers. */
  #usableUntil = -Infinity;
  #bad = false;
  #generation = 0;
  #failure: RefreshFailure | undefined;
  #superseded: SupersededRecord | undefined;

  /** The token held, usable or not. */
  get token(): TokenSnapshot | undefined {
    return this.#token;
  }

  /** The hot path: the token if it is valid at `now`, outside the expiry margin and not marked bad. */
  usable(now: number): TokenSnapshot | undefined {
    return this.#token !== undefined && !this.#bad && now < this.#usableUntil ? this.#token : undefined;
  }

  /** True while the token is held back because the service rejected it (its renewal on the wire). */
  get bad(): boolean {
    return this.#bad;
  }

  /** The service rejected the token: hold it back from requests until the renewal settles. */
  markBad(): void {
    this.#bad = true;
  }

  /** The renewal failed: serve `token` again if it is still the one held. */
  unmarkBad(token: TokenSnapshot | undefined): void {
    if (this.#token === token) this.#bad = false;
  }

  /** The last refresh failure, until a refresh succeeds. */
  get failure(): RefreshFailure | undefined {
    return this.#failure;
  }

  get superseded(): SupersededRecord | undefined {
    return this.#superseded;
  }

  /** Installs a token the service issued for a request sent at `sentAt`; clears the failure. */
  obtained(result: AuthResult, creds: Credentials, sentAt: number, sentAtWall: number, lifetimeSeconds: number): TokenSnapshot {
    const lifetimeMs = lifetimeSeconds * 1000;
    const token: TokenSnapshot = Object.freeze({
      value: result.token,
      generation: ++this.#generation,
      fingerprint: fingerprint(result.token),
      apiKey: creds.apiKey,
      ...(creds.rkObjectId !== undefined ? { rkObjectId: creds.rkObjectId } : {}),
      obtainedAt: sentAt,
      obtainedAtWall: sentAtWall,
      expiresAt: sentAt + lifetimeMs,
      lifetimeSeconds,
    });
    this.#token = token;
    this.#usableUntil = token.expiresAt - Math.min(MAX_MARGIN_MS, lifetimeMs * MARGIN_FRACTION);
    this.#bad = false;
    this.#failure = undefined;
    return token;
  }

  /** A gentoken attempt failed at `wallNow`. */
  failed(cause: GentokenCause, detail: string, wallNow: number): void {
    const previous = this.#failure;
    this.#failure = { cause, detail, atWall: wallNow, sinceWall: previous?.sinceWall ?? wallNow, count: (previous?.count ?? 0) + 1 };
  }

  /** A superseded rejection at `wallNow`: `inWindow` such rejections in the window, `holds` when that points at another holder. */
  supersededAt(wallNow: number, inWindow: number, holds: boolean): void {
    this.#superseded = { lastAtWall: wallNow, inWindow, holds, total: (this.#superseded?.total ?? 0) + 1 };
  }
}
