import type { Registry } from '@prometheus-io/client';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config/schema.js';
import type { LocalizationPart } from '../localization/localization-part.js';
import type { Logger } from '../observability/logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { SidecarStatus } from '../observability/status.js';
import type { Listener } from '../proxy/listener/listener.js';
import type { ReplayBudget } from '../proxy/body/replay-body.js';
import type { UploadShare } from '../proxy/body/upload-share.js';
import type { ServicePart } from '../service/service-part.js';
import type { Clock } from '../shared/clock.js';
import type { RunGroup } from '../shared/run-group.js';
import type { SecretSet } from '../shared/secrets.js';

/**
 * The sidecar's start sequence (sidecar.ts lists it): one part per file here, each with a start
 * and, where it holds something, a stop. What one part makes, the parts after it read from
 * {@link Made}; what they all need arrives as {@link PartDeps}.
 */
export interface PartDeps {
  config: Config;
  group: RunGroup;
  metrics: Metrics;
  registry: Registry;
  replayBudget: ReplayBudget;
  /** The bounds on streamed request bodies (fair-shares.ts), shared by every proxy listener. */
  uploadShare: UploadShare;
  clock: Clock;
  logger: Logger;
  secrets: SecretSet;
  random?: () => number;
  configPath?: string;
  env?: Readonly<Record<string, string | undefined>>;
}

/** What the parts have made so far; filled in as they start. */
export interface Made {
  service?: ServicePart;
  localization?: LocalizationPart;
  handler?: (req: IncomingMessage, res: ServerResponse) => void;
  /** The handler of each credential set with its own `listen`, by id. */
  setHandlers?: Map<string, (req: IncomingMessage, res: ServerResponse) => void>;
  /** The credential sets' own listeners, which a drain closes with the proxy's. */
  setListeners?: Listener[];
  /** The proxy's TCP listener and unix-socket listener, which a drain closes first. */
  proxy?: Listener;
  socket?: Listener;
  ports: { proxy?: number; admin?: number };
  /** The bound addresses, as the status reports them. */
  listeners: SidecarStatus['listeners'];
}

/** A value an earlier part made; a part started out of order is a wiring bug. */
export function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`${what} is not started yet (the start sequence is out of order)`);
  return value;
}
