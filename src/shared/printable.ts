/**
 * Text from another program made safe to print on a terminal: C0 and C1 control characters
 * (ESC, CSI U+009B, CR, LF, BEL, …), DEL, the line and paragraph separators and the bidirectional
 * overrides are written as `\xNN` / `\uNNNN`, so whatever answers on a port the CLI asks can
 * neither move the cursor, rewrite earlier lines, set the window title, nor forge a line of its own
 * (docs/security.md, "Admin clients print only what is safe"). Everything else stays as it is.
 */
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function printable(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** `value` with every string in it (object keys too, at any depth) made printable. */
export function printableDeep(value: unknown): unknown {
  if (typeof value === 'string') return printable(value);
  if (Array.isArray(value)) return value.map(printableDeep);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[printable(k)] = printableDeep(v);
    return out;
  }
  return value;
}
