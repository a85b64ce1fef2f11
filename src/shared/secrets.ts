import { createHash } from 'node:crypto';

/** Short, non-reversible identifier of a secret for logs: the first 8 hex digits of its SHA-256. */
export function fingerprint(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 8);
}

const REDACTED = '[REDACTED]';
/** Values shorter than this are not scrubbed by value: they would blank ordinary words. */
const MIN_SECRET_LENGTH = 4;

/**
 * The secrets currently in use (password, ApiKey, tokens, localization token). The logger scrubs
 * every one of them from each line, wherever it appears, so a secret cannot leak through an
 * error message, a header dump or a `%O` argument. Old tokens stay listed for a while after
 * rotation because they may still appear in late log lines.
 */
export class SecretSet {
  /** Credentials: kept for the life of the process, never trimmed. */
  #permanent = new Set<string>();
  /** Tokens: many over a long run, so only the most recent ones are kept. */
  #rotating = new Set<string>();
  #pattern: RegExp | undefined;
  readonly #maxRotating: number;

  constructor(maxRotating = 64) {
    this.#maxRotating = maxRotating;
  }

  /** Adds a credential (password, ApiKey, localization token): scrubbed for the life of the process. */
  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.#permanent.has(value)) return;
    this.#rotating.delete(value);
    this.#permanent.add(value);
    this.#pattern = undefined;
  }

  /**
   * Adds a token. Old tokens stay listed for a while after rotation because they may still appear
   * in late log lines; beyond `maxRotating` the oldest is dropped so a long run does not grow
   * without bound. Credentials added with `add` are never dropped.
   */
  addToken(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.#permanent.has(value) || this.#rotating.has(value)) return;
    this.#rotating.add(value);
    while (this.#rotating.size > this.#maxRotating) {
      const oldest = this.#rotating.values().next().value as string;
      this.#rotating.delete(oldest);
    }
    this.#pattern = undefined;
  }

  has(value: string): boolean {
    return this.#permanent.has(value) || this.#rotating.has(value);
  }

  /** Returns `text` with every known secret (and its JSON-escaped form) replaced. */
  redact(text: string): string {
    if (this.#permanent.size === 0 && this.#rotating.size === 0) return text;
    this.#pattern ??= new RegExp(
      [...this.#permanent, ...this.#rotating]
        .flatMap((v) => [v, JSON.stringify(v).slice(1, -1)])
        .sort((a, b) => b.length - a.length)
        .map(escapeRegExp)
        .join('|'),
      'g',
    );
    return text.replace(this.#pattern, REDACTED);
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
