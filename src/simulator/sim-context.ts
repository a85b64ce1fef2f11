import type { SimulatorFaults } from './sim-faults.js';
import type { SimulatorStats } from './sim-stats.js';
import type { TokenPresentation } from './token-presentation.js';
import type { TokenStore } from './token-store.js';

/** What the route handlers share: the integrator's expected credentials and the mutable state. */
export interface SimContext {
  apiKey: string;
  password: string;
  /** The password before the last `POST /_simulator/password`, still accepted (a vendor's rotation window). */
  previousPassword?: string | undefined;
  /** When set, only this object id is known to `GET /pub/b2b/v1/objects/<id>`. */
  rkObjectId: string | undefined;
  /** Where protected operations expect the token, and whether they also need the ApiKey. */
  auth: TokenPresentation;
  tokens: TokenStore;
  faults: SimulatorFaults;
  stats: SimulatorStats;
}
