import { REPLAY_BLOCK_BYTES, ReplayBudget } from '../../src/proxy/replay-body.js';
import { BlockPool } from '../../src/shared/block-pool.js';
import { systemClock } from '../../src/shared/clock.js';

/** A replay budget with the production block size, as the sidecar builds it. */
export function replayBudget(capacity: number): ReplayBudget {
  return new ReplayBudget(capacity, new BlockPool(REPLAY_BLOCK_BYTES, systemClock, 10_000));
}
