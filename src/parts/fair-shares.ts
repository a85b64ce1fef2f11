import type { Config } from '../config/schema.js';
import type { ShareLimit } from '../observability/metric-definitions.js';
import { ReplayBudget } from '../proxy/body/replay-body.js';
import { UploadShare } from '../proxy/body/upload-share.js';

/**
 * The numbers of the proxy's fair shares (docs/design.md, "Request bodies"), derived once from the
 * configuration; the `b2b_sidecar_share_limit` gauge shows them (its `limit` label says which:
 * metric-definitions.ts SHARE_LIMITS).
 */
export type ShareLimits = Record<ShareLimit, number>;

/** The small body every client connection can always have replayed (a typical JSON POST fits). */
export const RESERVED_BYTES_PER_CONNECTION = 8 * 1024;

export interface FairShares {
  replayBudget: ReplayBudget;
  uploadShare: UploadShare;
  limits: ShareLimits;
}

/**
 * The replay budget and the streamed-upload share, sized from `proxy.*`. `connections`: every
 * client connection the proxy's listeners accept at once (`proxy.maxConnections` on TCP, and as
 * many again on `listen.socket`). Streams may use ¾ of `proxy.maxSockets` (all of it when it is 1);
 * the reserve is `connections` × 8 KiB (at most ¼ of the budget, each room shrunk to fit).
 */
export function fairShares(proxy: Config['proxy'], connections: number): FairShares {
  const { maxSockets, streamedUploadShare, replayBodyLimitBytes, replayBufferTotalBytes } = proxy;
  const perSource = Math.max(1, Math.floor(maxSockets * streamedUploadShare));
  const total = maxSockets < 2 ? 1 : maxSockets - Math.max(1, Math.floor(maxSockets / 4));
  const wanted = Math.min(RESERVED_BYTES_PER_CONNECTION, replayBodyLimitBytes);
  const reserved = Math.min(Math.floor(replayBufferTotalBytes / 4), wanted * connections);
  const perConnection = Math.floor(reserved / Math.max(1, connections));
  // Each source's share of the budget, kept free for the others: the same share as of the pool, and room for one whole copy.
  const replayBudget = new ReplayBudget(replayBufferTotalBytes, Math.max(replayBodyLimitBytes, Math.floor(replayBufferTotalBytes * streamedUploadShare)), { bytes: perConnection * connections, perConnection });
  const uploadShare = new UploadShare(perSource, total);
  return {
    replayBudget,
    uploadShare,
    limits: {
      streams_per_source: uploadShare.perSource,
      streams_all_sources: uploadShare.total,
      replay_bytes_per_source: replayBudget.perSource,
      replay_reserved_bytes: replayBudget.reserve.bytes,
      replay_reserved_bytes_per_connection: replayBudget.reserve.perConnection,
    },
  };
}
