/**
 * undici's dispatcher core, imported file by file instead of through the package entry point.
 * `import 'undici'` also loads fetch, WebSocket, cookies and cache stores, and one of them reads
 * `globalThis.Headers`, which makes Node load its own bundled copy of undici as well: start-up
 * time and resident memory that a proxy never uses (bench/results/findings.md). undici
 * declares no "exports" map, so these paths are part of what the package publishes.
 */
import PoolClass from 'undici/lib/dispatcher/pool.js';
import util from 'undici/lib/core/util.js';

export const Pool = PoolClass;
export type Pool = InstanceType<typeof PoolClass>;

/** Raw header pairs (as handed to a dispatch handler) to an object with lower-case names. */
export const parseHeaders = util.parseHeaders;
