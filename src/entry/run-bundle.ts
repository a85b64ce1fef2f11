import { createRequire } from 'node:module';
import { runCommand } from '../commands/run.js';
import { plainRunArgs } from './plain-run-args.js';
import { processIo, settle, surviveLostOutput, tuneV8ForServing } from './process-io.js';

/**
 * The second process entry: a plain `run` (plain-run-args.ts). scripts/bundle.mjs builds it into
 * one CommonJS file, dist/lib/bundle/run.cjs, with a V8 code cache, which dist/cli.js (launcher.ts)
 * loads without the ES module loader and without commander (start-up time; bench/results/findings.md).
 * Loading the file only defines `main`; the launcher calls it once every module is evaluated, so
 * tuneV8ForServing still runs after everything `run` needs at start-up is loaded.
 */
export function main(argv: readonly string[]): void {
  const args = plainRunArgs(argv);
  if (!args) throw new Error(`run-bundle: not a plain run command line: ${argv.join(' ')}`);
  surviveLostOutput();
  loadLazyBuiltins();
  tuneV8ForServing();
  settle(runCommand(args, processIo));
}

/**
 * Built-ins that start-up would load lazily, after tuneV8ForServing: listen() loads node:cluster
 * (and with it child_process and dgram), host lookups node:dns. Loaded first they compile from
 * Node's code cache, which Node rejects once a V8 flag has changed (~3× slower). A bundler drops
 * bare `import 'node:x'` of built-ins, hence require.
 */
function loadLazyBuiltins(): void {
  const require = createRequire(import.meta.url);
  for (const id of ['node:cluster', 'node:dns']) require(id);
}
