import type { Writable } from 'node:stream';
import winston from 'winston';
import type { SecretSet } from '../shared/secrets.js';

const LEVEL = Symbol.for('level');
const MESSAGE = Symbol.for('message');
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

/**
 * The process logger: one JSON object per line with `level`, `message`, `time` (ISO) and the
 * fields. `errors` runs first so Error objects keep their stack, `splat` second so `%O`
 * arguments are already part of the message when redaction sees it (PITFALLS 27).
 */
export function createLogger({ level, secrets, stream = process.stdout }: LoggerOptions): winston.Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(
      winston.format.errors({ stack: true }),
      winston.format.splat(),
      redactingJson(secrets)(),
    ),
    transports: [new winston.transports.Stream({ stream, eol: '\n' })],
  });
}

/**
 * Builds a fresh record (never touching the caller's objects, which winston may hand us
 * as-is), blanks sensitive keys at any depth, serialises it and then scrubs known secret values
 * from the text, which also covers secrets inside messages, stacks and formatted arguments.
 */
function redactingJson(secrets: SecretSet) {
  return winston.format((info) => {
    const record: Record<string, unknown> = {
      level: info.level,
      message: copy(info.message, 0, new WeakSet()),
      time: new Date().toISOString(),
    };
    const seen = new WeakSet<object>([info]);
    for (const key of Object.keys(info)) {
      if (key === 'level' || key === 'message' || key === 'time') continue;
      record[key] = isSensitiveKey(key) ? REDACTED : copy(info[key], 1, seen);
    }
    return {
      level: info.level,
      message: '',
      [LEVEL]: info[LEVEL] ?? info.level,
      [MESSAGE]: secrets.redact(JSON.stringify(record)),
    };
  });
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
