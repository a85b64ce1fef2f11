import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CONTROL_ROUTES, createB2bSimulator, parseTokenIn, type B2bSimulator, type TokenPresentation } from '../simulator/b2b-simulator.js';
import type { CommandIo } from './io.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

/** Arguments of the `simulate` command (all optional; defaults for a local demo). */
export interface SimulateArgs {
  /** Listen port; default 8443 (0 picks a free one). */
  port?: number;
  /** Listen address; default 127.0.0.1. */
  host?: string;
  /** `aliveSecondsTtl` of issued tokens in seconds; default 900 (the seed's 15 minutes). */
  ttl?: number;
  /** Expected ApiKey; default `demo-api-key`. */
  apiKey?: string;
  /** Expected password; default `demo-password`. */
  password?: string;
  /** Allowed client addresses/CIDRs; default everyone who can reach the port. */
  allow?: string[];
  /** Where to write the CA certificate (PEM); default a new temporary directory. */
  caOut?: string;
  /** Latency added to every answer, in ms; default 0. */
  latencyMs?: number;
  /**
   * The one token presentation protected operations accept (`header:NAME[:SCHEME][+apikey]` or
   * `query:NAME[+apikey]`); default `Authorization: Bearer` with the ApiKey header.
   */
  tokenIn?: string;
}

/**
 * Runs the simulated B2B service alone for integrators' own tests: prints its URL, the CA file
 * to trust, the credentials and the control API, then serves until SIGINT/SIGTERM.
 * Exit codes: 0 after a signal, 1 when it cannot listen, 2 for invalid arguments.
 */
export async function simulateCommand(args: SimulateArgs, io: CommandIo): Promise<number> {
  const apiKey = args.apiKey ?? 'demo-api-key';
  const password = args.password ?? 'demo-password';
  const ttl = args.ttl ?? 900;
  const host = args.host ?? '127.0.0.1';
  const port = args.port ?? 8443;
  // Registered before anything starts, so a signal during start-up is not lost.
  const signalled = new Promise<void>((resolve) => {
    io.onSignal('SIGINT', resolve);
    io.onSignal('SIGTERM', resolve);
  });

  let sim: B2bSimulator;
  let tokenIn: TokenPresentation | undefined;
  try {
    tokenIn = args.tokenIn === undefined ? undefined : parseTokenIn(args.tokenIn);
    sim = createB2bSimulator({ apiKey, password, ttlSeconds: ttl, host, port, allow: args.allow, ...(tokenIn ? { tokenIn } : {}) });
    if (args.latencyMs !== undefined) sim.faults.setLatency(args.latencyMs, 'all');
  } catch (err) {
    io.stderr.write(`simulate: ${errorText(err)}\n`);
    return EXIT_USAGE;
  }
  let url: string;
  let caPath: string;
  // A folder of our own for the CA unless --ca-out names a file; removed on exit.
  let tempDir: string | undefined;
  try {
    ({ url } = await sim.start());
    if (!args.caOut) tempDir = await mkdtemp(join(tmpdir(), 'b2b-simulator-'));
    caPath = args.caOut ?? join(tempDir!, 'ca.pem');
    await writeFile(caPath, sim.caPem);
  } catch (err) {
    io.stderr.write(`simulate: cannot start on ${host}:${port}: ${errorText(err)}\n`);
    await sim.stop();
    if (tempDir) await rm(tempDir, { recursive: true, force: true });
    return EXIT_FAILURE;
  }

  io.stdout.write(banner({ url, caPath, apiKey, password, ttl, allow: args.allow, latencyMs: args.latencyMs, tokenIn }));
  await signalled;
  await sim.stop();
  if (tempDir) await rm(tempDir, { recursive: true, force: true });
  io.stdout.write('Simulator stopped.\n');
  return EXIT_OK;
}

interface BannerInfo {
  url: string;
  caPath: string;
  apiKey: string;
  password: string;
  ttl: number;
  allow: string[] | undefined;
  latencyMs: number | undefined;
  tokenIn: TokenPresentation | undefined;
}

function banner(b: BannerInfo): string {
  const ca = shellQuote(b.caPath);
  const lines = [
    `B2B simulator listening on ${b.url}`,
    `CA certificate: ${b.caPath}  (set service.caFile to it; curl --cacert)`,
    `Credentials: ApiKey=${b.apiKey} password=${b.password}  (tokens live ${b.ttl} s)`,
    `Sidecar config: service.baseUrl=${b.url} service.caFile=${b.caPath}`,
    b.allow ? `Allowed clients: ${b.allow.join(', ')}` : undefined,
    b.latencyMs ? `Added latency: ${b.latencyMs} ms` : undefined,
    'Get a token:',
    `  curl --cacert ${ca} -X POST ${b.url}/pub/b2b/v1/auth/gentoken -H 'Content-Type: application/json'` +
      ` -H ${shellQuote(`ApiKey: ${b.apiKey}`)} -d ${shellQuote(JSON.stringify({ password: b.password }))}`,
    'Call a protected operation with it:',
    `  ${callLine(b, ca)}`,
    `Control API (no token needed), e.g. curl --cacert ${ca} ${b.url}/_simulator/stats:`,
    ...CONTROL_ROUTES.map((r) => `  ${r}`),
    'Press Ctrl-C to stop.',
  ];
  return lines.filter((l) => l !== undefined).join('\n') + '\n';
}

/** A curl line presenting the token the way the simulator expects it (`--token-in`). */
function callLine(b: BannerInfo, ca: string): string {
  const p = b.tokenIn ?? { in: 'header', name: 'Authorization', scheme: 'Bearer', requireApiKey: true };
  const apiKey = p.requireApiKey ? ` -H ${shellQuote(`ApiKey: ${b.apiKey}`)}` : '';
  if (p.in === 'query') return `curl --cacert ${ca} '${b.url}/pub/b2b/v1/echo?${p.name}=<token>'${apiKey}`;
  return `curl --cacert ${ca} ${b.url}/pub/b2b/v1/echo -H ${shellQuote(`${p.name}: ${p.scheme ? `${p.scheme} ` : ''}<token>`)}${apiKey}`;
}

/** Quotes for a POSIX shell, so printed curl lines work as printed whatever the credentials hold. */
function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
