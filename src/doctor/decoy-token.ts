import { randomInt } from 'node:crypto';

/**
 * A token of the same shape the service never issued: the same length, every letter and digit
 * (and `-`, `_`, `+`, `/`) drawn at random from the token's own alphabet (hex stays hex, base64url
 * stays base64url), other characters (a JWT's dots, base64 padding) kept in place. Random, so
 * nothing of the real token can be read back from it (an echoing service prints it); the caller
 * registers it for redaction all the same. `pick(n)` is a uniform integer below n.
 */
export function unknownToken(token: string, pick: (n: number) => number = randomInt): string {
  const own = alphabetOf(token);
  // Nothing to draw (no letter, digit or mark) or a single character: every position from letters and digits.
  const everyPosition = own.length < 2 || ![...token].some((c) => own.includes(c));
  const alphabet = everyPosition ? ALPHANUMERIC : own;
  for (;;) {
    const decoy = [...(token || 'x')].map((c) => (everyPosition || own.includes(c) ? alphabet[pick(alphabet.length)]! : c)).join('');
    if (decoy !== token) return decoy;
  }
}

const ALPHANUMERIC = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** The characters a token draws from: digits, a-f or a-z, A-F or A-Z, and the URL-safe or base64 marks it holds. */
function alphabetOf(token: string): string {
  let alphabet = /[0-9]/.test(token) ? '0123456789' : '';
  const lower = token.match(/[a-z]/g) ?? [];
  if (lower.length > 0) alphabet += lower.every((c) => c <= 'f') ? 'abcdef' : 'abcdefghijklmnopqrstuvwxyz';
  const upper = token.match(/[A-Z]/g) ?? [];
  if (upper.length > 0) alphabet += upper.every((c) => c <= 'F') ? 'ABCDEF' : 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';
  for (const mark of ['-', '_', '+', '/']) if (token.includes(mark)) alphabet += mark;
  return alphabet;
}
