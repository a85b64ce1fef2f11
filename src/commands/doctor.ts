import type { Config } from '../config/schema.js';
import { createCredentialStore, type CredentialStore } from '../token/credential-store.js';
import { confirmConfigured, DEFAULT_DISCOVERY_RATE, discoverAttach, parseTry } from '../doctor/attach-discovery.js';
import { unknownToken } from '../doctor/decoy-token.js';
import { haltOf, haltStep } from '../doctor/discovery-halt.js';
import type { Attachment } from '../config/schema.js';
import { checkConnection } from '../doctor/connect-check.js';
import { formatSteps, type DoctorStep } from '../doctor/doctor-report.js';
import { checkGentoken } from '../doctor/gentoken-check.js';
import { checkProbe, type ProbeTarget } from '../doctor/probe-check.js';
import { ConfigError } from '../shared/errors.js';
import { envReplacements, loadConfig } from '../config/load-config.js';
import { storeLabel } from '../config/credential-sets.js';
import { createLogger } from '../observability/logger.js';
import { basePathOf } from '../upstream/engine.js';
import { SecretSet } from '../shared/secrets.js';
import { createTokenClient } from '../token/token-client.js';
import { checkListenAddresses } from '../doctor/listen-check.js';
import { checkFleetStore } from '../doctor/fleet-check.js';
import { openFleetStore } from '../service/fleet-store-open.js';
import { findRunningSidecar, type RunningSidecar } from '../doctor/running-sidecar.js';
import { reachSet, type SetReach, type SetUnreachable } from '../doctor/set-reach.js';
import { throughRunningSidecar } from '../doctor/through-sidecar.js';
import { tokenClientOptions, transportOptions } from '../service/service-part.js';
import { openUpstream, UpstreamOpenError, type Upstream } from '../upstream/open-upstream.js';
import { createUndiciEngine } from '../upstream/undici-engine.js';
import type { CommandIo } from './io.js';
import { chooseCredentialSets, configForSet } from './credential-choice.js';
import { credentialSets, type CredentialSet } from '../config/credential-sets.js';
import { EXIT_FAILURE, EXIT_OK, EXIT_USAGE } from './exit-codes.js';

/** Arguments of `doctor`. */
export interface DoctorArgs {
  config?: string;
  /** Print the steps as a JSON array of {@link DoctorStep}. */
  json?: boolean;
  /** A harmless GET path under `service.baseUrl` that the integrator knows (e.g. an object lookup). */
  probe?: string;
  /** Try the common token presentations on the probe path (needs `probe`). */
  discoverAttach?: boolean;
  /** `--try KIND:NAME:VALUE` guesses to test on the probe path instead of the standard list (needs `probe`). */
  try?: string[];
  /** Discovery requests per second (default {@link DEFAULT_DISCOVERY_RATE}). */
  discoveryRate?: number;
  /**
   * Obtain a token of doctor's own even when a sidecar with this config runs (at a vendor that
   * keeps one token per ApiKey, that revokes the one the sidecar holds).
   */
  ownToken?: boolean;
  /** Check this credential set only (its id); by default every set, each under its own heading. */
  credential?: string;
  /** Waits between discovery requests; tests pass one that does not sleep. */
  sleep?: (ms: number) => Promise<void>;
}

/** Origin-form, under baseUrl: no scheme or authority (`//host`), no fragment, nothing invisible. */
const PROBE_PATH = /^\/(?!\/)[\x21-\x7e]*$/;

/**
 * `doctor --config FILE [--json] [--probe PATH] [--discover-attach] [--try SPEC]…`: the first-run
 * diagnosis. Steps in order, stopping at the first failure (except that a probe the service
 * refuses still runs the discovery asked for): config, connect (DNS, TCP, TLS chain and name),
 * gentoken, probe, discover-attach. Prints no password, ApiKey or token: every line goes through
 * the secret set, before anything is cut.
 * Beside a running sidecar with the same config (its admin address answers), doctor obtains no
 * token (a new one would revoke the sidecar's at a vendor that keeps one token per ApiKey): it
 * says so and probes through the sidecar's listener, which attaches the token it holds, unless
 * `ownToken` is set.
 * With several credential sets, steps 2 to 5 run for each set (or the one `--credential` names)
 * under its own heading: `credential set "<id>"` in the text, a field of `credentials` in --json
 * (`{"steps": [config, listen], "credentials": {"<id>": [steps]}}`); one set prints as before.
 * Exit codes: 0 every step passed, or discovery's verdict is `configured` or `found`; 1 a step
 * failed (or discovery's verdict is any other), for any set; 2 invalid configuration or options,
 * or an unknown `--credential` id (the known ones listed). `preloaded`: a config already loaded and
 * validated, used instead of loading `args.config` (tests).
 */
export async function doctorCommand(args: DoctorArgs, io: CommandIo, preloaded?: Config): Promise<number> {
  if ((args.discoverAttach || args.try?.length) && args.probe === undefined) {
    io.stderr.write(`doctor: ${args.discoverAttach ? '--discover-attach' : '--try'} needs --probe PATH (a harmless GET the service knows)\n`);
    return EXIT_USAGE;
  }
  const guesses = (args.try ?? []).map(parseTry);
  const badGuess = guesses.find((g): g is string => typeof g === 'string');
  if (badGuess) {
    io.stderr.write(`doctor: --try ${badGuess}\n`);
    return EXIT_USAGE;
  }
  if (args.probe !== undefined && !PROBE_PATH.test(args.probe)) {
    io.stderr.write('doctor: --probe must be a path under service.baseUrl starting with one /, e.g. /pub/b2b/v1/objects/123\n');
    return EXIT_USAGE;
  }
  const secrets = new SecretSet();
  const steps: DoctorStep[] = [];
  /** Several sets: each one's steps 2 to 5 under its id; undefined for one set (the report as before). */
  let perSet: Map<string, DoctorStep[]> | undefined;
  const finish = (code?: number): number => {
    io.stdout.write(secrets.redact(args.json ? `${JSON.stringify(perSet ? { steps, credentials: Object.fromEntries(perSet) } : steps, null, 2)}\n` : formatReport(steps, perSet)));
    return code ?? (perSet ? Math.max(exitCode(steps), ...[...perSet.values()].map(exitCode)) : exitCode(steps));
  };

  const loaded = await loadEverything(args.config, io, secrets, args.credential, preloaded);
  if ('usage' in loaded) return loaded.usage;
  steps.push(loaded.step);
  if (!('config' in loaded)) return finish(loaded.code);
  const { config, stores } = loaded;
  try {
    // The addresses run would bind; a conflict is reported and the diagnosis goes on (exit 1 at the end).
    const admin = { key: 'admin' as const, host: config.admin.host, port: config.admin.port };
    steps.push(await checkListenAddresses([{ key: 'listen', host: config.listen.host, port: config.listen.port }, admin], admin));
    if (config.fleet.store !== 'none') {
      // Read-only: the record a running fleet shares is never moved (doctor/fleet-check.ts); each set has its own.
      for (const { set, store } of stores) {
        const fleetStore = await openFleetStore(config, { logger: createLogger({ level: 'error', secrets, stream: io.stderr }), env: io.env }).catch((err: unknown) => err as Error);
        const named = stores.length > 1 ? ` (credential set "${set.id}")` : '';
        if (fleetStore instanceof Error) steps.push({ step: 'fleet', ok: false, detail: `fleet.store ${config.fleet.store}${named}: ${fleetStore.message}` });
        else if (fleetStore) steps.push(await checkFleetStore(fleetStore, configForSet(config, set).service.baseUrl, store.current().apiKey));
      }
    }
    const running = await findRunningSidecar(config);
    const options = { ...args, guesses: guesses as Attachment[] };
    const sets = credentialSets(config);
    if (sets.length === 1) {
      const [{ set, store }] = stores as [SetStore];
      await diagnose(configForSet(config, set), store, options, { steps, secrets, env: io.env, running, reach: reachSet(config.listen, set, sets) });
      return finish();
    }
    perSet = new Map();
    // One after another: each set's gentoken call and probes, as one operator would run them.
    for (const { set, store } of stores) {
      const own: DoctorStep[] = [];
      perSet.set(set.id, own);
      // Beside a running sidecar: this set's readiness, and a probe that chooses this set as an app's request would.
      const runningSet = running && await findRunningSidecar(config, undefined, set.id);
      await diagnose(configForSet(config, set), store, options, { steps: own, secrets, env: io.env, running: runningSet, reach: reachSet(config.listen, set, sets) });
    }
    return finish();
  } finally {
    for (const { store } of stores) store.close();
  }
}

/** A credential set and its credentials as `run` reads them. */
interface SetStore { set: CredentialSet; store: CredentialStore }

/** The report's text: the common steps, then each set's under its heading. */
function formatReport(steps: readonly DoctorStep[], perSet: ReadonlyMap<string, readonly DoctorStep[]> | undefined): string {
  if (!perSet) return formatSteps(steps);
  return [formatSteps(steps), ...[...perSet].map(([id, own]) => `\ncredential set "${id}"\n${own.length ? formatSteps(own) : ''}`)].join('');
}

/**
 * Step 1: the configuration exactly as `check-config` loads it, then the credentials of each set
 * checked (every set, or the one `credential` names) as `run` reads them at start (a credential
 * file `run` would refuse is a configuration error there too). An unknown `credential` is a usage
 * error, said on stderr.
 */
async function loadEverything(path: string | undefined, io: CommandIo, secrets: SecretSet, credential: string | undefined, preloaded: Config | undefined): Promise<{ step: DoctorStep; config: Config; stores: SetStore[] } | { step: DoctorStep; code: number } | { usage: number }> {
  const source = path ? `config file ${path} and environment` : 'environment (no --config)';
  const stores: SetStore[] = [];
  try {
    const config = preloaded ?? await loadConfig(path, io.env);
    const sets = chooseCredentialSets('doctor', credentialSets(config), credential, io);
    if (typeof sets === 'number') return { usage: sets };
    const logger = createLogger({ level: 'error', secrets, stream: io.stderr });
    for (const set of sets) stores.push({ set, store: await createCredentialStore(set, { logger, secrets, ...storeLabel(set) }) });
    // Which source is used, where the environment or systemd replaced the file's choice.
    const replaced = envReplacements(config).map((r) => `; ${r}`).join('');
    return { config, stores, step: { step: 'config', ok: true, detail: `${source}: valid (the checks of check-config), credentials readable${replaced}` } };
  } catch (err) {
    for (const { store } of stores) store.close();
    if (err instanceof ConfigError) {
      const step: DoctorStep = { step: 'config', ok: false, detail: `${source}: invalid configuration`, hint: 'fix every problem listed (check-config lists the same)', problems: err.problems };
      return { step, code: EXIT_USAGE };
    }
    return { step: { step: 'config', ok: false, detail: `${source}: cannot be loaded: ${(err as Error).message}`, hint: 'check the file and its permissions' }, code: EXIT_FAILURE };
  }
}

/**
 * 0 when every step passed, or when discovery's verdict is `configured` or `found` (the failed
 * probe is then what the found block fixes); else 1.
 */
function exitCode(steps: readonly DoctorStep[]): number {
  const discovery = steps.find((s) => s.step === 'discover-attach');
  if (discovery) return discovery.result === 'configured' || discovery.result === 'found' ? EXIT_OK : EXIT_FAILURE;
  return steps.every((s) => s.ok) ? EXIT_OK : EXIT_FAILURE;
}

/** What the steps share: the report so far, the secrets to scrub, the environment, a running sidecar. */
interface Diagnosis {
  steps: DoctorStep[];
  secrets: SecretSet;
  env: NodeJS.ProcessEnv;
  running: RunningSidecar | undefined;
  /** How a request reaches the set diagnosed through the running sidecar. */
  reach: SetReach | SetUnreachable;
}

/** Steps 2 to 5; pushes each onto `steps`, stopping after a failed one. */
async function diagnose(config: Config, store: CredentialStore, args: DoctorArgs & { guesses: Attachment[] }, diagnosis: Diagnosis): Promise<void> {
  const { steps, secrets, env } = diagnosis;
  let upstream: Upstream;
  try {
    upstream = await openUpstream('service', config.service, { env, secrets });
  } catch (err) {
    if (!(err instanceof UpstreamOpenError)) throw err;
    steps.push(err.stage === 'ca'
      ? { step: 'connect', ok: false, detail: `service.caFile cannot be used: ${err.message}`, hint: 'set service.caFile to a readable PEM file holding the CA certificate' }
      : { step: 'connect', ok: false, detail: `the way out to the service cannot be set up: ${err.message}`, hint: 'fix the key named (check-config reports the same)' });
    return;
  }
  try {
    await diagnoseOn(upstream, config, store, args, diagnosis);
  } finally {
    await upstream.close();
  }
}

/** Steps 2 to 5 on the service's opened upstream; its engine and client are closed with it. */
async function diagnoseOn(upstream: Upstream, config: Config, store: CredentialStore, args: DoctorArgs & { guesses: Attachment[] }, { steps, secrets, running, reach }: Diagnosis): Promise<void> {
  const url = upstream.baseUrl;
  const { ca, egress: way } = upstream;
  const certificate = way.certificate();
  const connect = await checkConnection({
    url, ca, caFile: config.service.caFile, timeoutMs: config.service.tokenTimeoutMs, egress: way.egress,
    clientCertificate: certificate && { subject: certificate.subject, notAfter: certificate.notAfter, key: 'service' },
  });
  // A proxy in the environment that is not used (NO_PROXY, service.proxy: none) is said; no proxy at all is the plain case.
  if (!way.egress.proxy && !/^direct \(no /.test(way.path)) connect.detail = `${way.path}; ${connect.detail}`;
  steps.push(connect);
  if (!connect.ok) return;

  const credentials = store.current();
  const base = `${url.origin}${basePathOf(url)}`;
  // The engine `run` would use, one connection: the probes go one after another.
  const engine = upstream.adopt(createUndiciEngine({ ...upstream.engineOptions(transportOptions(config)), maxSockets: 1 }));
  const direct = (token: string): ProbeTarget => ({
    engine, path: args.probe ?? '/', base,
    vars: { token, apiKey: credentials.apiKey, rkObjectId: credentials.rkObjectId },
    // Pieces too: a service that echoes a cut of the token or the ApiKey gives none of it away.
    redact: (text) => secrets.redactFragments(text),
  });
  const discovering = args.discoverAttach === true || args.guesses.length > 0;
  if (running && !args.ownToken) {
    // Plain HTTP to the sidecar's own listener, as the app sends it.
    const engineTo = (listener: URL) => createUndiciEngine({ ...upstream.engineOptions(transportOptions(config)), baseUrl: listener, ca: undefined, egress: undefined, maxSockets: 1 });
    await throughRunningSidecar(config, running, { probe: args.probe, guessing: args.guesses.length > 0, discovering, steps, secrets, direct: direct(''), engineTo, reach });
    return;
  }
  const clientOptions = tokenClientOptions(config, upstream);
  const client = upstream.adopt(createTokenClient(clientOptions));
  const gentoken = await checkGentoken(client, credentials, clientOptions);
  if (running && gentoken.result) gentoken.step.detail += `; --own-token: a b2b-sidecar with this config runs (${running.admin}), and at a vendor that keeps one token per ApiKey this token replaced the one it holds (it renews at its next 401)`;
  steps.push(gentoken.step);
  if (!gentoken.result || args.probe === undefined) return;
  secrets.addToken(gentoken.result.token);
  const target = direct(gentoken.result.token);
  const { answer, ...probe } = await checkProbe(target, config.token.attach, discovering);
  steps.push(probe);
  if (!discovering || probe.status === undefined) return;
  const halt = answer && haltOf(answer);
  if (halt) {
    steps.push(haltStep(halt, answer, `${base}${target.path}`, 0, { detail: `${halt}: the probe was answered ${answer.status}${answer.retryAfter !== undefined ? ` (Retry-After: ${answer.retryAfter})` : ''}; discovery not started (0 requests sent)` }));
    return;
  }
  // A token of the same shape the service never issued: random, and scrubbed like the real one.
  const decoyToken = unknownToken(gentoken.result.token);
  secrets.addToken(decoyToken);
  const options = { rate: args.discoveryRate ?? DEFAULT_DISCOVERY_RATE, decoyToken, ...(args.sleep ? { sleep: args.sleep } : {}) };
  if (args.guesses.length > 0) steps.push(await discoverAttach(target, { ...options, guesses: args.guesses }));
  else if (probe.ok) steps.push(await confirmConfigured(target));
  else if (probe.status < 500) steps.push(await discoverAttach(target, options));
}
