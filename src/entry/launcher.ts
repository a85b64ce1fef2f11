import { fileURLToPath } from 'node:url';
import { loadCommonJs } from './code-cache.js';
import { holdEarlySignals } from './early-signals.js';
import { plainRunArgs } from './plain-run-args.js';

/**
 * dist/cli.js, the installed `b2b-sidecar` binary: scripts/bundle.mjs makes this file a CommonJS
 * script there (dist/package.json says so; the modules live in dist/lib/, an ES module scope of
 * its own). An ES module entry costs Node's ES module loader, 3–4.5 ms of every start (finding
 * 31). Paths below are relative to dist/cli.js. A plain `run` loads the one CommonJS file built
 * from run-bundle.ts with its V8 code cache; every other command line loads the ES module bundle of
 * cli-bundle.ts with commander and its lazily imported command chunks.
 */
const argv = process.argv.slice(2);
// First, before any command's modules load: SIGUSR1 must not open the inspector, and an early
// SIGHUP must not end a serving command (early-signals.ts).
holdEarlySignals(['run', 'demo', 'simulate'].includes(argv[0] ?? ''), process.stderr);
if (plainRunArgs(argv)) {
  const run = loadCommonJs(fileURLToPath(new URL('./lib/bundle/run.cjs', import.meta.url))).exports as { main(argv: readonly string[]): void };
  run.main(argv);
} else {
  // No top-level await in a CommonJS script. A broken install (a chunk or dependency missing)
  // must fail whatever --unhandled-rejections says: `healthcheck` runs here, and exit 0 would
  // report a broken image healthy.
  import('./lib/bundle/cli.js' as string).catch((err: unknown) => {
    process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
    process.exitCode = 1;
  });
}
