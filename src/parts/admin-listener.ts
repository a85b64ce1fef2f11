import { createAdminHandler } from '../observability/admin.js';
import type { SidecarStatus } from '../observability/status.js';
import { createListener, type Listener } from '../proxy/listener/listener.js';
import { compileIpGuard } from '../shared/ip-guard.js';
import type { Part } from '../shared/part.js';
import { counted, listenOn } from './listen-on.js';
import type { Made, PartDeps } from './made.js';

/**
 * The admin listener's own limits: small requests from Prometheus and probes. A connection that
 * has not sent its request head within 2 s is answered 408 and closed, an idle kept-alive one is
 * closed 2 s after its last answer, and at 64 connections the longest-idle one is closed to let a
 * new one in: idle connections cannot hold the listener.
 */
const ADMIN_LIMITS = { requestTimeoutMs: 30_000, headersTimeoutMs: 2_000, keepAliveTimeoutMs: 2_000, maxHeaderBytes: 16_384, maxConnections: 64 };

/**
 * The addresses the sidecar's own `healthcheck` and `wait` connect from (a container's
 * HEALTHCHECK, a postStart hook): not counted by admin.maxConnectionsPerSource, so eight idle
 * connections of another local process cannot make the liveness check fail (docs/security.md,
 * "The admin listener cannot be held by idle connections"). Exactly these, not 127.0.0.0/8: a
 * service mesh's traffic arrives from 127.0.0.6.
 */
const PROBE_SOURCES = new Set(['127.0.0.1', '::1', '::ffff:127.0.0.1']);

/** What the admin endpoints render: the sidecar's one status and its two verdicts, and POST /shutdown. */
export interface AdminViews {
  status(): SidecarStatus;
  health(): { ready: boolean; reason?: string; warnings?: string[] };
  /** One credential set's readiness (`/readyz?credential=<id>`); undefined for an unknown id. */
  healthOf?(id: string): { ready: boolean; reason?: string; warnings?: string[] } | undefined;
  live(): { live: boolean; reason?: string };
  onShutdown(): void;
}

/** The admin listener (/metrics, /readyz, /healthz, /status): bound first, so probes answer while the rest binds. */
export function adminListenerPart(deps: PartDeps, made: Made, views: AdminViews): Part {
  const { config, metrics, logger, clock, registry } = deps;
  let admin: Listener | undefined;
  return {
    name: 'admin listener',
    async start() {
      const guard = compileIpGuard(config.admin.allow);
      const allows = (peer: string | undefined) => guard.allows(guard.clientAddress(peer, undefined));
      const listener = createListener(createAdminHandler({
        registry, health: views.health, status: views.status, ...(views.healthOf ? { healthOf: views.healthOf } : {}), logger, now: () => clock.now(),
        live: views.live,
        allow: allows,
        ...(config.admin.allowShutdown ? { onShutdown: views.onShutdown } : {}),
      }), { ...ADMIN_LIMITS, maxConnectionsPerSource: config.admin.maxConnectionsPerSource }, logger, {
        // Judged as the connection opens: idle connections from a refused source must not fill the
        // listener's 64 and take /healthz (and the liveness probe) down.
        admit: allows,
        // At 64, the longest-idle connection makes room for a new one: a probe's request is
        // answered however many idle connections local processes keep opening.
        evictIdle: true,
        exemptFromPerSource: (peer) => peer !== undefined && PROBE_SOURCES.has(peer),
        onRefused: (reason) => metrics.connectionRefused('admin', reason),
        ...counted(metrics, 'admin'),
        full: { listener: 'admin', remedy: 'the admin listener takes 64 connections (fixed): find the clients holding them; admin.maxConnectionsPerSource bounds each source', now: () => clock.now() },
      });
      // Its stop is registered once it is bound (a failed bind leaves nothing open); a stop
      // racing the bind waits for it and then closes it.
      const port = await listenOn(listener, 'admin', config.admin);
      admin = listener;
      made.ports.admin = port;
      made.listeners.admin = `${config.admin.host}:${port}`;
    },
    stop: () => admin?.close(0),
  };
}
