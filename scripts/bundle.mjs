// Bundles the CLI after `tsc`: one ESM entry plus lazily loaded chunks per command. Resolving
// and compiling ~400 separate module files made `run` take ~700 ms to listen; bundled it is
// well under the 300 ms start-to-ready target. dist/*.js from tsc stay for library use.
import { build } from 'esbuild';
import { writeFile } from 'node:fs/promises';

await build({
  entryPoints: ['dist/cli.js'],
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  minify: true,
  keepNames: true,
  sourcemap: true,
  logLevel: 'error',
  // CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __b2bRequire } from 'node:module'; const require = __b2bRequire(import.meta.url);" },
});
await writeFile('dist/cli.js', "#!/usr/bin/env node\n// Entry point: the bundled CLI (see scripts/bundle.mjs).\nimport './bundle/cli.js';\n", { mode: 0o755 });
