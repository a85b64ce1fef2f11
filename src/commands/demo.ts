import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { validateConfig } from '../config/validate-config.js';
import { ConfigError } from '../shared/errors.js';
import { createLogger } from '../observability/logger.js';
import { SecretSet } from '../shared/secrets.js';
import { createSidecar, type Sidecar } from '../sidecar.js';
import { createB2bSimulator } from '../simulator/b2b-simulator.js';
import { generateTlsMaterial } from '../simulator/certs.js';
import { createLocalizationSimulator } from '../simulator/localization-simulator.js';
import { serve } from './run.js';
import type { CommandIo } from './io.js';
import { EXIT_FAILURE, EXIT_USAGE } from './exit-codes.js';

const DEMO = { apiKey: 'demo-api-key', password: 'demo-password', rkObjectId: 'demo-object', l10nToken: 'demo-l10n-token' };

/**
 * `demo`: the simulated B2B service and localization server, and a sidecar in front of them on
 * free loopback ports. Prints the URLs and curl lines that work exactly as printed (stdout);
 * the sidecar's JSON logs go to stderr so the two don't interleave. Runs until Ctrl-C.
 * Exit codes: 0 after Ctrl-C, 1 cannot start, 2 a bad option (also a --port/--admin-port in use),
 * 130 after a second signal. The temporary folder (CA, config with the demo credentials) and the
 * simulators are removed/stopped on every way out.
 */
export async function demoCommand(args: { port?: number; adminPort?: number; ttl: number }, io: CommandIo): Promise<number> {
  // aliveSecondsTtl is an integer in the API description; the simulator would refuse 1.5 later.
  if (!Number.isInteger(args.ttl) || args.ttl < 1) {
    io.stderr.write(`demo: --ttl must be a whole number of seconds (1 or more), got ${args.ttl}\n`);
    return EXIT_USAGE;
  }
  const dir = await mkdtemp(join(tmpdir(), 'b2b-sidecar-demo-'));
  try {
    return await runDemo(args, io, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function runDemo(args: { port?: number; adminPort?: number; ttl: number }, io: CommandIo, dir: string): Promise<number> {
  const tls = await generateTlsMaterial(['localhost', '127.0.0.1', '::1']);
  const caFile = join(dir, 'ca.pem');
  await writeFile(caFile, tls.caPem);
  const b2b = createB2bSimulator({ apiKey: DEMO.apiKey, password: DEMO.password, ttlSeconds: args.ttl, tls, rkObjectId: DEMO.rkObjectId });
  const l10n = createLocalizationSimulator({ token: DEMO.l10nToken, tls });
  const stopSimulators = () => Promise.all([b2b.stop(), l10n.stop()]);
  let b2bUrl: string;
  let l10nUrl: string;
  try {
    ({ url: b2bUrl } = await b2b.start());
    ({ url: l10nUrl } = await l10n.start());
  } catch (err) {
    io.stderr.write(`demo: the simulators could not start: ${(err as Error).message}\n`);
    await stopSimulators();
    return EXIT_FAILURE;
  }

  try {
    const raw = {
      listen: { host: '127.0.0.1', port: args.port ?? 0 },
      admin: { host: '127.0.0.1', port: args.adminPort ?? 0 },
      service: { baseUrl: b2bUrl, caFile },
      credentials: { apiKey: DEMO.apiKey, password: DEMO.password, rkObjectId: DEMO.rkObjectId },
      localization: { baseUrl: l10nUrl, caFile, token: DEMO.l10nToken, watch: ['demo/web/en', 'demo/web/de'], pollIntervalSeconds: 30 },
    };
    const configFile = join(dir, 'sidecar.yaml');
    await writeFile(configFile, stringify(raw), { mode: 0o600 });
    let config;
    try {
      config = validateConfig(raw);
    } catch (err) {
      // Only the options can make the demo's own config invalid (e.g. --port equal to --admin-port).
      if (!(err instanceof ConfigError)) throw err;
      io.stderr.write(`demo: the options give an invalid configuration:\n  - ${err.problems.join('\n  - ')}\n`);
      return EXIT_USAGE;
    }
    const secrets = new SecretSet();
    const logger = createLogger({ level: 'info', secrets, stream: io.stderr });
    const { sidecar, startError } = watchStart(createSidecar(config, { logger, secrets, ...(io.version ? { version: io.version } : {}) }));
    const code = await serve(sidecar, io, logger, ({ port, adminPort }) => {
      const proxy = `http://127.0.0.1:${port}`;
      const admin = `http://127.0.0.1:${adminPort}`;
      io.stdout.write([
        'b2b-sidecar demo is running (Ctrl-C to stop).',
        `  sidecar: ${proxy}`,
        `  admin:   ${admin}`,
        `  simulated B2B service: ${b2bUrl} (ApiKey ${DEMO.apiKey}; CA ${caFile})`,
        `  simulated localization server: ${l10nUrl}`,
        `  config:  ${configFile}`,
        '',
        'Try (the sidecar attaches the token and ApiKey):',
        `curl -s ${proxy}/pub/b2b/v1/objects/${DEMO.rkObjectId}`,
        `curl -s -X POST -H 'Content-Type: application/json' -d '{"hello":"world"}' ${proxy}/pub/b2b/v1/echo`,
        `curl -s ${proxy}/l10n/api/translations/demo/web/en/`,
        `curl -s ${admin}/readyz`,
        `curl -s ${admin}/metrics`,
        '',
        'And the translation command:',
        // dist/cli.js, two levels up from the bundle's chunks (dist/lib/bundle/) and from dist/lib/commands/.
        `node ${fileURLToPath(new URL('../../cli.js', import.meta.url))} translation demo/web/en --config ${configFile}`,
        '',
      ].join('\n'));
    });
    // A port the user chose that is taken is a bad option, not a runtime failure.
    const err = startError();
    if (code === EXIT_FAILURE && err && hasCode(err, 'EADDRINUSE')) {
      io.stderr.write(`demo: a port given with --port or --admin-port is in use: ${(err as Error).message}\n`);
      return EXIT_USAGE;
    }
    return code;
  } finally {
    await stopSimulators();
  }
}

/** The same sidecar, remembering why `start()` failed (serve() only logs it). */
function watchStart(inner: Sidecar): { sidecar: Sidecar; startError: () => unknown } {
  let failure: unknown;
  const sidecar = Object.create(inner) as Sidecar;
  Object.defineProperty(sidecar, 'start', {
    value: () => inner.start().catch((err: unknown) => {
      failure = err;
      throw err;
    }),
  });
  return { sidecar, startError: () => failure };
}

function hasCode(err: unknown, code: string): boolean {
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if ((e as { code?: unknown }).code === code) return true;
  }
  return false;
}
