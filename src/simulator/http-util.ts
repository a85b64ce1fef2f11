import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { sendJsonBody as sendJson } from '../shared/send-json.js';

/** The simulator answers like the sidecar does (shared/send-json.ts). */
export { sendJson };

/**
 * The simulators' server timeouts, all set (never Node's defaults, which change between
 * releases): what Node 22 and 24 default to, which the test suite and the benchmark were built
 * against, except no socket inactivity limit (the stream routes and fault injection hold
 * connections silent on purpose).
 */
export const SIMULATOR_TIMEOUTS = Object.freeze({ headersTimeoutMs: 60_000, requestTimeoutMs: 300_000, keepAliveTimeoutMs: 5_000, idleTimeoutMs: 0 });

/** Sends the seed's ErrorMessage shape. */
export function sendMessage(res: ServerResponse, status: number, message: string, headers?: Record<string, string>): void {
  sendJson(res, status, { message }, headers);
}

/** The result of reading a small request body: the bytes, or `tooLarge` once `limit` is exceeded. */
export type BodyResult = { ok: true; body: Buffer } | { ok: false; reason: 'tooLarge' | 'aborted' };

/**
 * Buffers a small request body (gentoken, control API). Stops collecting past `limit` but keeps
 * draining, so the answer still reaches a client that is busy sending.
 */
export function readSmallBody(req: IncomingMessage, limit: number): Promise<BodyResult> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? { ok: false, reason: 'tooLarge' } : { ok: true, body: Buffer.concat(chunks) }));
    req.on('error', () => resolve({ ok: false, reason: 'aborted' }));
    req.on('close', () => {
      if (!req.complete) resolve({ ok: false, reason: 'aborted' });
    });
  });
}

/** Streams the request body through SHA-256 without keeping it (the echo route takes any size). */
export function hashBody(req: IncomingMessage): Promise<{ bytes: number; sha256: string } | undefined> {
  return new Promise((resolve) => {
    const hash = createHash('sha256');
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      hash.update(chunk);
    });
    req.on('end', () => resolve({ bytes, sha256: hash.digest('hex') }));
    req.on('error', () => resolve(undefined));
    req.on('close', () => {
      if (!req.complete) resolve(undefined);
    });
  });
}

/**
 * Waits `ms` of real time (latency and `slow` are about sockets, not token time, so they do not
 * use the injected clock). Resolves false early when the response closes, so stop() never
 * leaves a timer behind and nothing writes to a destroyed socket.
 */
export function waitUnlessClosed(ms: number, res: ServerResponse): Promise<boolean> {
  if (ms <= 0) return Promise.resolve(!res.destroyed);
  return new Promise((resolve) => {
    const onClose = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      res.off('close', onClose);
      resolve(!res.destroyed);
    }, ms);
    res.once('close', onClose);
  });
}

/** The media type of a Content-Type header without parameters, lower-cased. */
export function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0]!.trim().toLowerCase();
}

/** Constant-time string comparison, so the simulator does not model a timing oracle. */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Parses a non-negative integer query/body value, or undefined. */
export function nonNegativeInt(value: unknown, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 && n <= max ? n : undefined;
}
