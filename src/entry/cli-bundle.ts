#!/usr/bin/env node
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { EXIT_OK, EXIT_USAGE } from '../commands/exit-codes.js';
import { processIo as io, settle, surviveLostOutput, tuneV8ForServing } from './process-io.js';

// Every command line but a plain `run [--config FILE]`, which dist/cli.js (launcher.ts) hands to
// run-bundle.ts without commander. Commands load lazily: `run` must not pay for the simulator's
// certificate library or the localization schema at start-up (start-to-ready is a benchmark target).
const commands = {
  run: () => import('../commands/run.js').then((m) => m.runCommand),
  demo: () => import('../commands/demo.js').then((m) => m.demoCommand),
  simulate: () => import('../commands/simulate.js').then((m) => m.simulateCommand),
  token: () => import('../commands/token.js').then((m) => m.tokenCommand),
  checkConfig: () => import('../commands/check-config.js').then((m) => m.checkConfigCommand),
  translation: () => import('../commands/translation.js').then((m) => m.translationCommand),
  doctor: () => import('../commands/doctor.js').then((m) => m.doctorCommand),
  healthcheck: () => import('../commands/healthcheck.js').then((m) => m.healthcheckCommand),
  wait: () => import('../commands/wait.js').then((m) => m.waitCommand),
  status: () => import('../commands/status.js').then((m) => m.statusCommand),
};

const version = io.version ?? 'unknown';

function port(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number 0-65535');
  return n;
}

/** Whole seconds: aliveSecondsTtl is an integer (int64) in the API description. */
function positiveInteger(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('must be a whole number of seconds above 0');
  return n;
}

function nonNegative(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('must be a number of milliseconds, 0 or more');
  return n;
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('must be a number above 0');
  return n;
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

let result: Promise<number> = Promise.resolve(EXIT_OK);
const program = new Command('b2b-sidecar')
  .description('Token-refreshing sidecar proxy for a back-to-back authorization API')
  .version(version, '-v, --version')
  .exitOverride()
  .showHelpAfterError()
  .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) });
const configOption = () => new Option('-c, --config <file>', 'configuration file (YAML or JSON); environment variables override it');
const adminOption = () => new Option('--admin <url>', 'the admin listener, e.g. http://127.0.0.1:9464 (default: the admin section of --config and B2B_ADMIN_PORT, else 127.0.0.1:9464)');
/** `status`, `wait`, `healthcheck` read the admin section only: credentials and service need not be readable or set. */
const adminConfigOption = () => new Option('-c, --config <file>', 'configuration file: only its admin section is read (credentials, service.baseUrl and the rest are neither read nor checked)');

program.command('run').description('run the sidecar in the foreground (JSON logs on stdout)')
  .addOption(configOption())
  .action((o: { config?: string }) => { result = commands.run().then((f) => { tuneV8ForServing(); surviveLostOutput(); return f(o, io); }); });
program.command('demo').description('start a simulated service with a sidecar in front of it and print curl lines to try')
  .option('--port <n>', 'proxy listener port (default: a free one)', port)
  .option('--admin-port <n>', 'admin listener port (default: a free one)', port)
  .option('--ttl <seconds>', 'token lifetime the simulated service grants', positiveInteger, 60)
  .action((o: { port?: number; adminPort?: number; ttl: number }) => { result = commands.demo().then((f) => { tuneV8ForServing(); surviveLostOutput(); return f(o, io); }); });
program.command('simulate').description('run the simulated B2B service alone, for integration tests')
  .option('--port <n>', 'listen port', port, 8443)
  .option('--host <address>', 'listen address', '127.0.0.1')
  .option('--ttl <seconds>', 'aliveSecondsTtl of issued tokens', positiveInteger, 900)
  .option('--api-key <key>', 'expected ApiKey', 'demo-api-key')
  .option('--password <password>', 'expected password', 'demo-password')
  .option('--allow <cidr>', 'allowed client address or CIDR (repeatable; default: any)', collect)
  .option('--ca-out <file>', 'where to write the CA certificate (PEM)')
  .option('--latency-ms <ms>', 'latency added to every answer', nonNegative)
  .option('--token-in <presentation>', 'the one way protected operations accept the token: header:NAME[:SCHEME][+apikey] or query:NAME[+apikey] (default: header:Authorization:Bearer+apikey)')
  .action((o: import('../commands/simulate.js').SimulateArgs) => { result = commands.simulate().then((f) => { surviveLostOutput(); return f(o, io); }); });
program.command('token').description('obtain one token and print it')
  .addOption(configOption())
  .option('--json', 'print the whole AuthResult')
  .option('--own-token', 'obtain a token even when a sidecar with this config runs (at a vendor that keeps one token per ApiKey it revokes the sidecar\'s)')
  .option('--credential <id>', 'the credential set whose token to obtain (credentials[].id; needed when the config has several)')
  .action((o: import('../commands/token.js').TokenArgs) => { result = commands.token().then((f) => f(o, io)); });
program.command('check-config').description('validate the configuration and print it with secrets redacted')
  .addOption(configOption())
  .action((o: { config?: string }) => { result = commands.checkConfig().then((f) => f(o, io)); });
program.command('doctor').description('diagnose the set-up step by step: config, connection, gentoken, and optionally a probe and how the token must be attached')
  .addOption(configOption())
  .option('--json', 'print the steps as a JSON array')
  .option('--probe <path>', 'a harmless GET path under service.baseUrl to try with the token attached (e.g. an object lookup)')
  .option('--discover-attach', 'find how the service wants the token, by evidence against a baseline without one, and print the token.attach block to paste')
  .option('--try <KIND:NAME:VALUE>', 'test one guess on the probe path without editing the config, e.g. header:X-Access-Token:{token} (repeatable; also query: and cookie:)', collect)
  .option('--discovery-rate <n>', 'discovery requests per second (default 4)', positiveNumber)
  .option('--own-token', 'obtain a token of doctor\'s own even when a sidecar with this config runs (by default doctor probes through it; at a vendor that keeps one token per ApiKey a new token revokes the sidecar\'s)')
  .option('--credential <id>', 'check this credential set only (credentials[].id); by default every set, each under its own heading')
  .action((o: import('../commands/doctor.js').DoctorArgs) => { result = commands.doctor().then((f) => f(o, io)); });
program.command('translation').description('show one translation of the localization server')
  .argument('<project/component/language>', 'translation to look up, e.g. demo/web/en')
  .addOption(configOption())
  .option('--json', 'print the validated translation object')
  .action((ref: string, o: { config?: string; json?: boolean }) => { result = commands.translation().then((f) => f({ ref, ...o }, io)); });
program.command('healthcheck').description('exit 0 when /healthz on the configured admin listener answers 200, else 1 (for a container HEALTHCHECK)')
  .addOption(adminConfigOption())
  .addOption(adminOption())
  .action((o: { config?: string; admin?: string }) => { result = commands.healthcheck().then((f) => f(o, io)); });

program.command('wait').description('exit 0 once /readyz answers 200 (the sidecar holds a token), 1 on timeout: for postStart hooks, ExecStartPost= and scripts')
  .addOption(adminConfigOption())
  .option('--timeout <duration>', 'how long to wait: 30s, 500ms, 2m', '30s')
  .addOption(adminOption())
  .option('--credential <id>', 'wait for this credential set alone (/readyz?credential=<id>), not for every set')
  .action((o: import('../commands/wait.js').WaitArgs) => { result = commands.wait().then((f) => f(o, io)); });
program.command('status').description('print the running sidecar\'s status (token, last refresh error, warnings, listeners, build); exit 0 ready, 1 not ready, 3 cannot reach it')
  .addOption(adminConfigOption())
  .addOption(adminOption())
  .option('--json', 'print the status as JSON, as GET /status answers it')
  .action((o: import('../commands/status.js').StatusArgs) => { result = commands.status().then((f) => f(o, io)); });

try {
  program.parse(process.argv);
  if (process.argv.length <= 2) {
    program.outputHelp();
    result = Promise.resolve(EXIT_USAGE);
  }
} catch (err) {
  // Help and version are "errors" with code 0 under exitOverride; everything else is usage.
  result = Promise.resolve(err instanceof CommanderError && err.exitCode === 0 ? EXIT_OK : EXIT_USAGE);
}

settle(result);
