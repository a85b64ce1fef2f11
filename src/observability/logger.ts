import type { Writable } from 'node:stream';
import { format } from 'node:util';
import type { SecretSet } from '../shared/secrets.js';

const REDACTED = '[REDACTED]';
/** Deeper structures are cut: a log line is not a heap dump, and cycles must not hang the logger. */
const MAX_DEPTH = 8;

/**
 * Keys whose values are replaced wherever they appear, compared lower-case with `-` and `_`
 * removed, so `Authorization`, `api_key`, `X-Api-Key` and `refresh_token` are all caught.
 */
const SENSITIVE_KEYS = new Set([
  'password', 'passwd', 'apikey', 'xapikey', 'token', 'accesstoken', 'refreshtoken', 'authtoken',
  'authorization', 'proxyauthorization', 'cookie', 'setcookie', 'secret', 'clientsecret',
]);

/** True when a field named `key` must never be logged by value. */
export function isSensitiveKey(key: string): boolean {
  return SENSITIVE_KEYS.has(key.toLowerCase().replace(/[-_]/g, ''));
}

export interface LoggerOptions {
  /** Lowest level written: `error`, `warn`, `info` or `debug`. */
  level: string;
  /** Every value in it is scrubbed from each serialised line. */
  secrets: SecretSet;
  /** Where lines go; defaults to process.stdout. */
  stream?: Writable;
}

/** A level's method: a message (printf-style `%s`/`%O` arguments allowed) or an Error, then fields. */
export type LogMethod = (message: string | Error, ...args: unknown[]) => void;

/** The process logger every part receives. */
export interface Logger {
  readonly level: string;
  error: LogMethod;
  warn: LogMethod;
  info: LogMethod;
  debug: LogMethod;
}

const LEVELS: Readonly<Record<string, number>> = { error: 0, warn: 1, info: 2, debug: 3 };
/** printf-style placeholders util.format consumes; `%%` (a literal percent sign) consumes none. */
const PLACEHOLDER = /%[sdifjoOc%]/g;

/**
 * The process logger: one JSON object per line with `level`, `message`, `time` (ISO) and the
 * fields. An Error as the message keeps its stack; `%s`/`%O` arguments are formatted into the
 * message before redaction sees it (docs/traps.md T27). Our own ~60 lines instead of winston, which with
 * its formats and streams was the largest library on the start path; the line format
 * is the one winston wrote. Writes go straight to the stream; `run` ends by setting
 * `process.exitCode`, never `process.exit()`, so queued lines reach a piped stdout (docs/traps.md T28).
 */
export function createLogger({ level, secrets, stream = process.stdout }: LoggerOptions): Logger {
  const threshold = LEVELS[level] ?? LEVELS.info!;
  const method = (name: string): LogMethod => {
    if (LEVELS[name]! > threshold) return () => undefined;
    return (message, ...args) => {
      let line: string;
      try {
        line = secrets.redact(JSON.stringify(record(name, message, args)));
      } catch (err) {
        // A log call must never take the process down, and the uncaught error would print what it
        // was formatting (docs/traps.md T34). Say that a line was lost, with nothing from it.
        line = JSON.stringify({ level: name, message: 'a log line could not be written', time: new Date().toISOString(), reason: (err as Error)?.name ?? 'error' });
      }
      stream.write(`${line}\n`);
    };
  };
  return { level, error: method('error'), warn: method('warn'), info: method('info'), debug: method('debug') };
}

/**
 * Builds a fresh record (never touching the caller's objects), blanks sensitive keys at any
 * depth; the caller then scrubs known secret values from the serialised text, which also covers
 * secrets inside messages, stacks and formatted arguments.
 */
function record(level: string, message: string | Error, args: unknown[]): Record<string, unknown> {
  const out: Record<string, unknown> = { level, message: '', time: new Date().toISOString() };
  const seen = new WeakSet<object>();
  let fields: unknown[] = args;
  if (message instanceof Error) {
    const error = copy(message, 0, seen) as Record<string, unknown>;
    out.message = message.message;
    // Its stack, code and cause become fields; the line's own level and time stay the line's.
    for (const [key, value] of Object.entries(error)) {
      if (key !== 'message' && key !== 'name' && key !== 'level' && key !== 'time') out[key] = value;
    }
  } else {
    const text = String(message);
    const wanted = (text.match(PLACEHOLDER) ?? []).filter((p) => p !== '%%').length;
    out.message = wanted > 0 ? format(text, ...args.slice(0, wanted)) : text;
    fields = args.slice(wanted);
  }
  // Objects after the message (and its placeholders' arguments) are fields of the line, as winston's splat made them.
  for (const extra of fields) {
    if (!extra || typeof extra !== 'object') continue;
    // An Error after the message is kept whole (message, stack, cause) under `err`.
    if (extra instanceof Error) {
      out.err = copy(extra, 1, seen);
      continue;
    }
    for (const [key, value] of Object.entries(extra)) {
      if (key === 'level' || key === 'time') continue;
      if (key === 'message') {
        // Appended, as winston did, rather than lost.
        if (typeof value === 'string' && value !== '') out.message = out.message === '' ? value : `${out.message} ${value}`;
        continue;
      }
      out[key] = isSensitiveKey(key) ? REDACTED : copy(value, 1, seen);
    }
  }
  return out;
}

/** JSON-safe deep copy with key redaction; Errors keep name, message and stack. */
function copy(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  switch (typeof value) {
    case 'string': case 'number': case 'boolean': return value;
    case 'bigint': return value.toString();
    case 'undefined': case 'function': case 'symbol': return undefined;
  }
  if (value === null) return null;
  const obj = value as object;
  if (seen.has(obj)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Truncated]';
  seen.add(obj);
  try {
    if (obj instanceof Error) {
      const out = copyFields(obj, depth, seen);
      if (obj.cause !== undefined) out.cause = copy(obj.cause, depth + 1, seen);
      return { name: obj.name, message: obj.message, stack: obj.stack, ...out };
    }
    const toJSON = (obj as { toJSON?: unknown }).toJSON;
    if (typeof toJSON === 'function') return copy(toJSON.call(obj), depth + 1, seen);
    if (Array.isArray(obj)) return obj.map((v) => copy(v, depth + 1, seen) ?? null);
    if (obj instanceof Map) return copyFields(Object.fromEntries(obj), depth, seen);
    if (obj instanceof Set) return [...obj].map((v) => copy(v, depth + 1, seen) ?? null);
    return copyFields(obj, depth, seen);
  } finally {
    // Only ancestors count as cycles; the same object twice side by side is logged twice.
    seen.delete(obj);
  }
}

function copyFields(obj: object, depth: number, seen: WeakSet<object>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(obj)) {
    out[key] = isSensitiveKey(key) ? REDACTED : copy(v, depth + 1, seen);
  }
  return out;
}
