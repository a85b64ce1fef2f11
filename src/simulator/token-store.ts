import { randomBytes } from 'node:crypto';
import type { Clock } from '../shared/clock.js';

/** How a presented token was judged. */
export type TokenVerdict = 'valid' | 'expired' | 'revoked' | 'unknown';

interface Issued {
  expiresAt: number;
  revoked: boolean;
  /** The ApiKey the token was issued to: it is valid only with that key. */
  owner: string;
}

/**
 * Tokens the simulator issued, with their expiry on the injected clock. Expired and revoked
 * tokens are remembered (up to `capacity`, oldest dropped first) so that presenting one can be
 * told apart from presenting garbage — the integration tests count expired presentations.
 */
export class TokenStore {
  readonly #issued = new Map<string, Issued>();
  readonly #clock: Clock;
  readonly #capacity: number;

  constructor(clock: Clock, capacity = 100_000) {
    this.#clock = clock;
    this.#capacity = capacity;
  }

  /**
   * Issues a fresh random token (32 bytes, base64url) living `ttlSeconds`, to `owner` (an ApiKey).
   * With `onlyLive`, every earlier token of the same owner is revoked: a vendor that keeps one
   * live token per key.
   */
  issue(ttlSeconds: number, owner = '', onlyLive = false): string {
    const token = randomBytes(32).toString('base64url');
    if (onlyLive) for (const entry of this.#issued.values()) if (entry.owner === owner) entry.revoked = true;
    this.#issued.set(token, { expiresAt: this.#clock.now() + ttlSeconds * 1000, revoked: false, owner });
    while (this.#issued.size > this.#capacity) {
      this.#issued.delete(this.#issued.keys().next().value as string);
    }
    return token;
  }

  /** Judges a presented token. Revocation wins over expiry only while the token had time left. */
  check(token: string): TokenVerdict {
    const entry = this.#issued.get(token);
    if (!entry) return 'unknown';
    if (this.#clock.now() >= entry.expiresAt) return 'expired';
    return entry.revoked ? 'revoked' : 'valid';
  }

  /** The ApiKey a token was issued to; undefined for a token this store never issued (or forgot). */
  ownerOf(token: string): string | undefined {
    return this.#issued.get(token)?.owner;
  }

  /** Invalidates every token issued so far; tokens issued later are unaffected. */
  revokeAll(): void {
    for (const entry of this.#issued.values()) entry.revoked = true;
  }
}
