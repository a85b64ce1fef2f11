/**
 * simulator/: the simulated B2B service (this file) and Weblate server used by `demo`,
 * `simulate` and the tests. May import: shared/ only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { SIMULATOR_TIMEOUTS } from './http-util.js';
import { setServerTimeouts } from '../shared/server-timeouts.js';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock } from '../shared/clock.js';
import { compileIpGuard } from '../shared/ip-guard.js';
import { API_PREFIX, handleApi } from './api-routes.js';
import { generateTlsMaterial, type TlsMaterial } from './certs.js';
import { CONTROL_PREFIX, handleControl } from './control-api.js';
import { GENTOKEN_PATH, handleGentoken } from './gentoken.js';
import { sendMessage } from './http-util.js';
import type { SimContext } from './sim-context.js';
import { SimulatorFaults } from './sim-faults.js';
import { SimulatorStats } from './sim-stats.js';
import { DEFAULT_PRESENTATION, type TokenPresentation } from './token-presentation.js';
import { TokenStore } from './token-store.js';

export type { TokenFaultKind, LatencyScope } from './sim-faults.js';
export { SimulatorFaults } from './sim-faults.js';
export { SimulatorStats, type CapturedTokenRequest } from './sim-stats.js';
export { CONTROL_ROUTES } from './control-api.js';
export { parseTokenIn, describePresentation, type TokenPresentation } from './token-presentation.js';

/** Options of {@link createB2bSimulator}. */
export interface B2bSimulatorOptions {
  /** The ApiKey the integrator must send (gentoken and every protected operation). */
  apiKey: string;
  /** The password gentoken expects in `{"password": ...}`. */
  password: string;
  /** `aliveSecondsTtl` of issued tokens, and their real lifetime on `clock`. */
  ttlSeconds: number;
  /** Listen address; default 127.0.0.1. */
  host?: string;
  /** Listen port; default 0 (any free port, read back from `start()`). */
  port?: number;
  /** Certificate and key; a throw-away CA and certificate are generated at start when absent. */
  tls?: TlsMaterial;
  /** Client addresses/CIDRs allowed to use the server (the API description: access may be restricted to allowed addresses and subnets); others get 403. Default: everyone. */
  allow?: string[];
  /** Token expiry is judged on `clock.now()`; default the system clock. */
  clock?: Clock;
  /**
   * Where protected operations expect the token, with the ApiKey header required too. Default
   * `Authorization: Bearer <token>`. When given without `scheme`, the header carries the bare token.
   */
  auth?: { header: string; scheme?: string };
  /** Overrides `auth`: any one presentation, with or without the ApiKey (`simulate --token-in`). */
  tokenIn?: TokenPresentation;
  /** When set, `GET /pub/b2b/v1/objects/<id>` knows only this id; otherwise any id. */
  rkObjectId?: string;
  /** Further keys the service knows (several credential sets); a token is valid only with the key it was issued to. */
  otherKeys?: ReadonlyArray<{ apiKey: string; password: string }>;
  /** A new token revokes the earlier ones of its key, as a vendor that keeps one live token per key does. */
  oneLiveTokenPerKey?: boolean;
}

/** A running (or startable) simulated B2B service. */
export interface B2bSimulator {
  /** Listens; resolves with the bound port and `https://host:port`. Repeated calls share the first start. */
  start(): Promise<{ port: number; url: string }>;
  /** Stops listening and closes every connection, idle keep-alive and hanging ones included. Idempotent. */
  stop(): Promise<void>;
  /** The base URL (`https://host:port`); throws before `start()` resolved. */
  readonly url: string;
  readonly faults: SimulatorFaults;
  readonly stats: SimulatorStats;
  /** Monotonic ms (performance.now()) of the latest gentoken requests: the benchmarks' calls per second. */
  readonly tokenRequestTimes: readonly number[];
  /** The CA that signed the server certificate (PEM); throws before `start()` when it is generated. */
  readonly caPem: string;
}

/**
 * The simulated service: the seed's gentoken operation with strict validation, protected sample
 * operations, fault injection (in process via `faults`, over HTTP under `/_simulator/`) and stats.
 * HTTPS only, like the real service.
 */
export function createB2bSimulator(options: B2bSimulatorOptions): B2bSimulator {
  const clock = options.clock ?? systemClock;
  const host = options.host ?? '127.0.0.1';
  const tokens = new TokenStore(clock);
  const stats = new SimulatorStats();
  const faults = new SimulatorFaults(options.ttlSeconds, () => tokens.revokeAll());
  faults.setTtl(options.ttlSeconds); // validates it
  const ctx: SimContext = {
    apiKey: options.apiKey,
    password: options.password,
    rkObjectId: options.rkObjectId,
    auth: options.tokenIn ?? (options.auth
      ? { in: 'header', name: options.auth.header.toLowerCase(), scheme: options.auth.scheme || undefined, requireApiKey: true }
      : DEFAULT_PRESENTATION),
    tokens,
    faults,
    stats,
    otherKeys: new Map((options.otherKeys ?? []).map((k) => [k.apiKey, k.password])),
    oneLiveTokenPerKey: options.oneLiveTokenPerKey ?? false,
    tokenRequestTimes: [],
  };
  // Compiled once, so an invalid entry fails here rather than per request; fails closed.
  const guard = options.allow ? compileIpGuard(options.allow) : undefined;
  let tls = options.tls;
  let server: Server | undefined;
  let started: Promise<{ port: number; url: string }> | undefined;
  let stopped: Promise<void> | undefined;
  let url: string | undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (guard && !guard.allows(guard.clientAddress(req.socket.remoteAddress, undefined))) {
      return sendMessage(res, 403, 'client address is not allowed');
    }
    const target = req.url ?? '/';
    const q = target.indexOf('?');
    const path = q < 0 ? target : target.slice(0, q);
    const query = q < 0 ? '' : target.slice(q + 1);
    if (path === GENTOKEN_PATH) return handleGentoken(req, res, ctx);
    if (path.startsWith(CONTROL_PREFIX)) return handleControl(req, res, ctx, path);
    if (path.startsWith(API_PREFIX)) return handleApi(req, res, ctx, path, query);
    sendMessage(res, 404, 'not found');
  };

  const start = async (): Promise<{ port: number; url: string }> => {
    tls ??= await generateTlsMaterial(certHosts(host));
    const srv = createServer({ key: tls.keyPem, cert: tls.certPem }, (req, res) => {
      handle(req, res).catch(() => {
        if (!res.headersSent) sendMessage(res, 500, 'internal simulator error');
        else res.destroy();
      });
    });
    setServerTimeouts(srv, SIMULATOR_TIMEOUTS);
    server = srv;
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(options.port ?? 0, host, () => {
        srv.off('error', reject);
        resolve();
      });
    });
    const port = (srv.address() as AddressInfo).port;
    url = `https://${urlHost(host)}:${port}`;
    return { port, url };
  };

  return {
    start() {
      if (stopped) return Promise.reject(new Error('the simulator was stopped'));
      started ??= start();
      return started;
    },
    stop() {
      stopped ??= (async () => {
        await started?.catch(() => undefined);
        const srv = server;
        if (!srv?.listening) return;
        const closed = new Promise<void>((resolve) => srv.close(() => resolve()));
        // close() only stops accepting; idle keep-alive and hanging sockets would keep it open.
        srv.closeAllConnections();
        await closed;
      })();
      return stopped;
    },
    get url() {
      if (!url) throw new Error('the simulator has not started');
      return url;
    },
    faults,
    stats,
    tokenRequestTimes: ctx.tokenRequestTimes,
    get caPem() {
      if (!tls) throw new Error('the CA is generated at start(); call start() first');
      return tls.caPem;
    },
  };
}

/** The names the generated certificate covers: loopback always, plus a specific listen host. */
function certHosts(host: string): string[] {
  const hosts = ['localhost', '127.0.0.1', '::1'];
  if (!isWildcard(host) && !hosts.includes(host)) hosts.push(host);
  return hosts;
}

function isWildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === '';
}

/** A wildcard listener is reached through localhost (which the certificate covers); IPv6 needs brackets. */
function urlHost(host: string): string {
  if (isWildcard(host)) return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}
