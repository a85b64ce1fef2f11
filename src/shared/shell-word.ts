/**
 * A value as one word of a POSIX shell command line an operator may paste: unchanged when it holds
 * only characters no shell interprets, else in single quotes (a `'` inside written `'\''`).
 * Request paths come from clients: printed bare in a suggested command, `;`, `$(…)` or a backtick
 * in one would run as a command in the shell of whoever pastes it (docs/traps.md T55).
 */
export function shellWord(value: string): string {
  if (value !== '' && /^[A-Za-z0-9_/.:@%+=,~-]+$/.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}
