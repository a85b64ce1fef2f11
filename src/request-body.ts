import type { IncomingMessage } from 'node:http';

/**
 * How a request body is sent upstream: not at all, fully buffered (so it can be replayed once
 * after a 401), or streamed straight through (larger or unknown-length bodies).
 */
export type BodyPlan = { kind: 'none' } | { kind: 'buffered'; body: Buffer } | { kind: 'stream' };

const NONE: BodyPlan = { kind: 'none' };
const STREAM: BodyPlan = { kind: 'stream' };

/**
 * Decides the plan from the framing headers and, for small bodies, reads the body. Chunked
 * bodies are streamed: their size is unknown until the end, and holding a request back to find
 * out would add latency to every upload.
 */
export function planBody(req: IncomingMessage, replayLimit: number): BodyPlan | Promise<BodyPlan> {
  if (req.headers['transfer-encoding'] !== undefined) return STREAM;
  const length = req.headers['content-length'];
  if (length === undefined || length === '0') return NONE;
  if (Number(length) > replayLimit) return STREAM;
  return readAll(req).then((body) => ({ kind: 'buffered', body }));
}

function readAll(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('close', () => {
      if (!req.complete) reject(Object.assign(new Error('client aborted the request body'), { code: 'ECONNRESET' }));
    });
  });
}
