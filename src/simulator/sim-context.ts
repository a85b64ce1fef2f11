import type { SimulatorFaults } from './sim-faults.js';
import type { SimulatorStats } from './sim-stats.js';
import type { TokenStore } from './token-store.js';

/** What the route handlers share: the integrator's expected credentials and the mutable state. */
export interface SimContext {
  apiKey: string;
  password: string;
  /** When set, only this object id is known to `GET /pub/b2b/v1/objects/<id>`. */
  rkObjectId: string | undefined;
  /** Header (lower-case) carrying the token on protected operations, and its scheme (none: raw token). */
  auth: { header: string; scheme: string | undefined };
  tokens: TokenStore;
  faults: SimulatorFaults;
  stats: SimulatorStats;
}
