import { createHash } from 'node:crypto';

/** Short, non-reversible identifier of a secret for logs: the first 8 hex digits of its SHA-256. */
export function fingerprint(secret: string): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 8);
}

const REDACTED = '[REDACTED]';
/** Values shorter than this are not scrubbed by value: they would blank ordinary words. */
const MIN_SECRET_LENGTH = 4;
/**
 * Forms longer than this are scrubbed by a plain substring scan rather than inside a regular
 * expression: V8 refuses a pattern that is too large ("Regular expression too large"), and an
 * 8 KiB file of NUL bytes, escaped, is already over 50,000 characters (docs/traps.md T34).
 */
const MAX_PATTERN_FORM = 1024;
/** Regular expressions are built from at most this many characters of source each. */
const MAX_PATTERN_SOURCE = 16 * 1024;

/**
 * The secrets currently in use (password, ApiKey, tokens, localization token). The logger scrubs
 * every one of them from each line, wherever it appears, so a secret cannot leak through an
 * error message, a header dump or a `%O` argument. Each is scrubbed as written and in the forms a
 * server or a log line may echo it in: JSON-escaped once and twice, and URL-encoded (with `%20`
 * and with `+`). Old tokens stay listed for a while after rotation because they may still
 * appear in late log lines. Nothing here can throw: a form too large for a pattern is scanned for.
 */
export class SecretSet {
  /** Credentials: kept for the life of the process, never trimmed. */
  #permanent = new Set<string>();
  /** Tokens: many over a long run, so only the most recent ones are kept. */
  #rotating = new Set<string>();
  #scrubbers: Array<(text: string) => string> | undefined;
  #fragments: Set<string> | undefined;
  readonly #maxRotating: number;

  constructor(maxRotating = 64) {
    this.#maxRotating = maxRotating;
  }

  /** Adds a credential (password, ApiKey, localization token): scrubbed for the life of the process. */
  add(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.#permanent.has(value)) return;
    this.#rotating.delete(value);
    this.#permanent.add(value);
    this.#scrubbers = undefined;
    this.#fragments = undefined;
  }

  /**
   * Adds a token. Old tokens stay listed for a while after rotation because they may still appear
   * in late log lines; beyond `maxRotating` the least recently added is dropped so a long run
   * does not grow without bound. Credentials added with `add` are never dropped.
   */
  addToken(value: string | undefined): void {
    if (!value || value.length < MIN_SECRET_LENGTH || this.#permanent.has(value)) return;
    if (this.#rotating.delete(value)) {
      // Added again (a value derived anew from each token but unchanged, as a Basic pair made
      // of the ApiKey alone): now the newest, so it is not dropped while still in use.
      this.#rotating.add(value);
      return;
    }
    this.#rotating.add(value);
    while (this.#rotating.size > this.#maxRotating) {
      const oldest = this.#rotating.values().next().value as string;
      this.#rotating.delete(oldest);
    }
    this.#scrubbers = undefined;
    this.#fragments = undefined;
  }

  has(value: string): boolean {
    return this.#permanent.has(value) || this.#rotating.has(value);
  }

  /** Returns `text` with every known secret, in each of its echoed forms, replaced. */
  redact(text: string): string {
    if (this.#permanent.size === 0 && this.#rotating.size === 0) return text;
    this.#scrubbers ??= buildScrubbers([...this.#permanent, ...this.#rotating]);
    let out = text;
    for (const scrub of this.#scrubbers) out = scrub(out);
    return out;
  }

  /**
   * {@link redact}, then every run of {@link FRAGMENT_RUN} or more characters that any secret (in
   * any echoed form) contains is hidden too: a service that echoes a prefix, a cut or a piece of a
   * token (a message cut at 12 characters, a `Bearer abc…` in a log excerpt) gives none of it
   * away. For text that came from a server and goes to a person (doctor's report, an answer
   * relayed to a diagnostic probe), never for log lines: it costs a set lookup per character.
   */
  redactFragments(text: string): string {
    const out = this.redact(text);
    if (out.length < FRAGMENT_RUN || (this.#permanent.size === 0 && this.#rotating.size === 0)) return out;
    this.#fragments ??= fragmentsOf([...this.#permanent, ...this.#rotating]);
    const hidden = new Uint8Array(out.length);
    let any = false;
    for (let i = 0; i + FRAGMENT_RUN <= out.length; i++) {
      if (!this.#fragments.has(out.slice(i, i + FRAGMENT_RUN))) continue;
      hidden.fill(1, i, i + FRAGMENT_RUN);
      any = true;
    }
    if (!any) return out;
    let masked = '';
    for (let i = 0; i < out.length; i++) {
      if (hidden[i] === 0) masked += out[i];
      else if (i === 0 || hidden[i - 1] === 0) masked += REDACTED;
    }
    return masked;
  }
}

/**
 * The shortest piece of a secret {@link SecretSet.redactFragments} hides: long enough that
 * ordinary words rarely match by chance, short enough that what is left of a token tells nothing.
 */
export const FRAGMENT_RUN = 6;

/** Every {@link FRAGMENT_RUN}-character piece of every echoed form of `values`. */
function fragmentsOf(values: readonly string[]): Set<string> {
  const out = new Set<string>();
  for (const form of new Set(values.flatMap(echoedForms))) {
    for (let i = 0; i + FRAGMENT_RUN <= form.length; i++) out.add(form.slice(i, i + FRAGMENT_RUN));
  }
  return out;
}

/** A secret as written and as it comes back echoed: JSON-escaped once and twice, URL-encoded. */
export function echoedForms(value: string): string[] {
  const once = JSON.stringify(value).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  const url = encodeURIComponent(value);
  return [value, once, twice, url, url.replace(/%20/g, '+')];
}

/**
 * The scrubbers for `values`, longest form first so a secret containing another is replaced
 * whole: short forms in a few bounded regular expressions, long ones by substring scan.
 */
function buildScrubbers(values: readonly string[]): Array<(text: string) => string> {
  const forms = [...new Set(values.flatMap(echoedForms))].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
  const scrubbers: Array<(text: string) => string> = [];
  const long = forms.filter((f) => f.length > MAX_PATTERN_FORM);
  for (const form of long) scrubbers.push((text) => (text.includes(form) ? text.split(form).join(REDACTED) : text));
  let chunk: string[] = [];
  let size = 0;
  const flush = () => {
    if (chunk.length === 0) return;
    const sources = chunk;
    chunk = [];
    size = 0;
    let pattern: RegExp | undefined;
    try {
      pattern = new RegExp(sources.map(escapeRegExp).join('|'), 'g');
    } catch {
      // Not expected at these sizes; a scan is slower but never fails.
    }
    scrubbers.push(pattern
      ? (text) => text.replace(pattern, REDACTED)
      : (text) => sources.reduce((t, form) => (t.includes(form) ? t.split(form).join(REDACTED) : t), text));
  };
  for (const form of forms) {
    if (form.length > MAX_PATTERN_FORM) continue;
    if (size + form.length > MAX_PATTERN_SOURCE) flush();
    chunk.push(form);
    size += form.length + 1;
  }
  flush();
  return scrubbers;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
