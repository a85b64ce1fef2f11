/**
 * The rules for a credential's text, shared by the credential store (at start and on every
 * re-read), the localization token source and config validation, so `check-config` rejects
 * exactly what `run` would. Messages never contain the text: it is a secret.
 */

/** How the value travels: in a header (ApiKey, localization token) or in the JSON body (password). */
export type CredentialCarrier = 'header' | 'body';

/** A header value must be visible ASCII, or `setHeader` throws at request time (docs/traps.md T14). */
const HEADER_SAFE = /^[\x21-\x7e]+$/;
/**
 * A JSON body carries any Unicode, but control characters, a byte-order mark or U+FFFD (what
 * invalid UTF-8 decodes to) inside a password are copy-paste or encoding accidents.
 */
// eslint-disable-next-line no-control-regex
const BODY_UNSAFE = /[\x00-\x1f\x7f\ufeff\ufffd]/;

/** The value a credential file holds: its text without trailing whitespace (the final newline). */
export function credentialFromFile(text: string): string {
  return text.trimEnd();
}

/**
 * Why a credential file's raw text cannot be used, or undefined. Checks what editors and
 * `echo` leave behind (nothing, only a newline, a byte-order mark, leading blanks) and then the
 * value's characters with {@link credentialValueProblem}.
 */
export function credentialFileProblem(text: string, carrier: CredentialCarrier): string | undefined {
  if (text === '') return 'is empty';
  if (text.startsWith('\ufeff')) return 'starts with a byte-order mark (U+FEFF); save it as UTF-8 without BOM';
  if (text.trim() === '') return 'holds only whitespace';
  if (/^\s/.test(text)) return 'starts with whitespace (a space or a blank line); remove it';
  return credentialValueProblem(credentialFromFile(text), carrier);
}

/** Why a credential value (inline or read from a file) cannot be sent, or undefined. */
export function credentialValueProblem(value: string, carrier: CredentialCarrier): string | undefined {
  if (value === '') return 'is empty';
  if (carrier === 'header') {
    return HEADER_SAFE.test(value) ? undefined : 'must be visible ASCII without spaces or control characters (it is sent in a header)';
  }
  return BODY_UNSAFE.test(value) ? 'must not contain control characters, a byte-order mark or invalid UTF-8' : undefined;
}
