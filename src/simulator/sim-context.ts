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
  /** Further keys (ApiKey → password) the service knows besides `apiKey`: each token is valid only with its own key. */
  otherKeys: ReadonlyMap<string, string>;
  /** A new token revokes the earlier ones of its key (a vendor that keeps one live token per key). */
  oneLiveTokenPerKey: boolean;
  /** Monotonic ms of every gentoken request, the latest 100,000 (the benchmarks' per-second peaks). */
  tokenRequestTimes: number[];
  /** When set, only this object id is known to `GET /pub/b2b/v1/objects/<id>`. */
  rkObjectId: string | undefined;
  /** Where protected operations expect the token, and whether they also need the ApiKey. */
  auth: TokenPresentation;
  tokens: TokenStore;
  faults: SimulatorFaults;
  stats: SimulatorStats;
}
