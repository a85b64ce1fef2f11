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
  #values = new Set<string>();
  #pattern: RegExp | undefined;
  readonly #maxRetained: number;

  constructor(maxRetained = 64) {
    this.#maxRetained = maxRetained;
  }

  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.#values.has(value)) return;
    this.#values.add(value);
    // Drop the oldest beyond the cap so a long-running process does not grow without bound.
    while (this.#values.size > this.#maxRetained) {
      const oldest = this.#values.values().next().value as string;
      this.#values.delete(oldest);
    }
    this.#pattern = undefined;
  }

  has(value: string): boolean {
    return this.#values.has(value);
  }

  /** Returns `text` with every known secret (and its JSON-escaped form) replaced. */
  redact(text: string): string {
    if (this.#values.size === 0) return text;
    this.#pattern ??= new RegExp(
      [...this.#values]
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
