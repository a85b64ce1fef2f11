import type { IncomingMessage } from 'node:http';
import type { CaptureDropReason } from '../observability/metrics.js';
import { ReplayTee, type ReplayBudget } from './replay-body.js';

/**
 * How a request body goes upstream: none; streamed straight from the client (not replayable:
 * declared larger than the replay limit, or replay off); or streamed while a copy is kept for
 * one replay (a Content-Length within the limit, or chunked — dropped if it outgrows it).
 * Bodies are never held back before sending: a slow upload reaches the service as it arrives.
 */
export type BodyPlan = { kind: 'none' } | { kind: 'stream'; tee: ReplayTee } | { kind: 'tee'; tee: ReplayTee };

const NONE: BodyPlan = { kind: 'none' };

export interface ReplayCapture {
  /** Largest body copied for replay, bytes (0: replay of bodies off). */
  limit: number;
  budget: ReplayBudget;
  onDrop(reason: CaptureDropReason): void;
}

/**
 * Both streamed kinds go through a ReplayTee, the copy-less one too: an engine that gives up on an
 * upload destroys the stream it was handed, and that must not be the client's request (its
 * connection, and the answer on its way, would go with it).
 */
export function planBody(req: IncomingMessage, replay: ReplayCapture): BodyPlan {
  if (req.headers['transfer-encoding'] === undefined) {
    const length = req.headers['content-length'];
    if (length === undefined || length === '0') return NONE;
    if (Number(length) > replay.limit) return { kind: 'stream', tee: new ReplayTee(req, 0, replay.budget, replay.onDrop) };
  }
  const kind = replay.limit === 0 ? 'stream' : 'tee';
  return { kind, tee: new ReplayTee(req, replay.limit, replay.budget, replay.onDrop) };
}
