import type { ServerResponse } from 'node:http';
import { nonNegativeInt, sendJson, sendMessage, waitUnlessClosed } from './http-util.js';

/** Byte i of every download is `i % 251` (a prime, so chunk boundaries never line up with it). */
export const PATTERN_MODULUS = 251;
/** A whole number of pattern periods, so every chunk can start at offset 0 of the pattern. */
const CHUNK_BYTES = PATTERN_MODULUS * 256;
const PATTERN = Buffer.from(Array.from({ length: CHUNK_BYTES }, (_, i) => i % PATTERN_MODULUS));
const MAX_DOWNLOAD_BYTES = 2 ** 34; // 16 GiB: far beyond any test, still a bound
const MAX_WAIT_MS = 10 * 60_000;

/** `GET download?bytes=N`: N deterministic bytes with Content-Length, streamed in chunks with backpressure. */
export async function download(res: ServerResponse, query: URLSearchParams): Promise<void> {
  const total = nonNegativeInt(query.get('bytes') ?? undefined, MAX_DOWNLOAD_BYTES);
  if (total === undefined) {
    sendMessage(res, 400, `bytes must be an integer from 0 to ${MAX_DOWNLOAD_BYTES}`);
    return;
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
  let sent = 0;
  while (sent < total) {
    if (res.destroyed) return;
    const n = Math.min(CHUNK_BYTES, total - sent);
    sent += n;
    if (!res.write(PATTERN.subarray(0, n))) await drainOrClose(res);
  }
  res.end();
}

/** `GET slow?ms=N`: answers after N real milliseconds (for client and proxy timeouts). */
export async function slow(res: ServerResponse, query: URLSearchParams): Promise<void> {
  const ms = nonNegativeInt(query.get('ms') ?? undefined, MAX_WAIT_MS);
  if (ms === undefined) {
    sendMessage(res, 400, `ms must be an integer from 0 to ${MAX_WAIT_MS}`);
    return;
  }
  if (await waitUnlessClosed(ms, res)) sendJson(res, 200, { sleptMs: ms });
}

/**
 * `GET drip?ms=N[&count=K]`: headers at once, then K (default 10) small chunks N ms apart — an
 * upstream that is never idle long enough for an idle timeout yet takes long to finish.
 */
export function drip(res: ServerResponse, query: URLSearchParams): void {
  const ms = nonNegativeInt(query.get('ms') ?? '100', MAX_WAIT_MS);
  const count = nonNegativeInt(query.get('count') ?? '10', 100_000);
  if (ms === undefined || count === undefined) {
    sendMessage(res, 400, 'ms and count must be non-negative integers');
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
  res.flushHeaders();
  let sent = 0;
  const timer = setInterval(() => {
    if (sent >= count) {
      clearInterval(timer);
      res.end();
      return;
    }
    res.write(`drip ${sent++}\n`);
  }, ms);
  res.once('close', () => clearInterval(timer));
}

function drainOrClose(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}
