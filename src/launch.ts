import { fileURLToPath } from 'node:url';
import { loadCommonJs } from './code-cache.js';
import { plainRunArgs } from './plain-run-args.js';

/**
 * dist/cli.js, the installed `b2b-sidecar` binary (bundled by scripts/bundle.mjs). A plain `run`
 * loads the one CommonJS file built from cli-run.ts with its V8 code cache; every other command
 * line loads the ES module bundle of cli.ts with commander and its lazily imported command chunks.
 */
const argv = process.argv.slice(2);
if (plainRunArgs(argv)) {
  const run = loadCommonJs(fileURLToPath(new URL('./bundle/run.cjs', import.meta.url))).exports as { main(argv: readonly string[]): void };
  run.main(argv);
} else {
  await import('./bundle/cli.js' as string);
}
