// Bundles the CLI after `tsc`: one ESM entry plus lazily loaded chunks per command. Resolving
// and compiling ~400 separate module files made `run` take ~700 ms to listen; bundling was the
// largest single start-up gain (bench/results/findings.md). dist/lib/*.js from tsc stay for library use.
//
// Layout: dist/cli.js is the launcher, a CommonJS script (dist/package.json: an ES module entry
// costs Node's ES module loader, 3–4.5 ms of every start, finding 31); everything else is in
// dist/lib/, an ES module scope of its own (dist/lib/package.json), with the bundles in dist/lib/bundle/.
// `npm run build` empties dist/ first: a build over the older layout left its files beside these,
// shipped by `npm pack` and no longer loadable under dist/package.json's "commonjs".
import { build } from 'esbuild';
import { chmod, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { Ajv } from 'ajv';
import standaloneCode from 'ajv/dist/standalone/index.js';

// Written before anything from dist/lib/ is imported: once dist/package.json exists, dist/lib/
// needs its own scope to stay ES modules.
await writeFile('dist/lib/package.json', '{ "type": "module" }\n');
await writeFile('dist/package.json', '{ "type": "commonjs" }\n');
const schemaModule = await import('../dist/lib/config/schema.js');
const { AJV_OPTIONS, addAnnotationKeywords } = await import('../dist/lib/config/validate-config.js');
const weblateSchemas = await import('../dist/lib/localization/weblate-schemas.js');

// The config validator as standalone code, so `run` does not compile the schema at start-up.
const ajv = addAnnotationKeywords(new Ajv({ ...AJV_OPTIONS, code: { source: true } }));
const validatorCode = standaloneCode.default(ajv, ajv.compile(schemaModule.ConfigSchema));
await writeFile('dist/lib/config-validator.cjs', validatorCode);

// The Weblate translation validator too (src/localization/translation-schema.ts looks for it), so
// neither ajv nor TypeBox is in the bundles: run.cjs is one script whose whole source stays in
// the heap, and they were 450 KB of it that a sidecar never ran (finding 26).
const translationAjv = new Ajv({ ...weblateSchemas.TRANSLATION_AJV_OPTIONS, code: { source: true } });
await writeFile('dist/lib/translation-validator.cjs', standaloneCode.default(translationAjv, translationAjv.compile(weblateSchemas.TranslationSchema)));

// undici's HTTP/2 client loads node:http2 when imported (~10 ms of start-up on one core) though
// it only runs with `allowH2`, which the sidecar never sets (its connectors offer only HTTP/1.1
// in ALPN). In the bundle undici gets what it falls back to on runtimes without http2.
const undiciWithoutHttp2 = {
  name: 'undici-without-http2',
  setup(build) {
    build.onResolve({ filter: /^node:http2$/ }, (args) =>
      args.importer.includes('/node_modules/undici/') ? { path: 'http2-unused', namespace: 'b2b-stub' } : undefined);
    build.onLoad({ filter: /.*/, namespace: 'b2b-stub' }, () => ({ contents: 'module.exports = { constants: {} };', loader: 'js' }));
  },
};

// The Prometheus client (@prometheus-io/client) requires @opentelemetry/api (~93 KB) at load for
// exemplars of its process CPU counter; the sidecar never enables exemplars, so the bundle gets an
// empty module (lib/metrics/processCpuTotal.js reads it only when `enableExemplars` is set).
const unusedOtel = {
  name: 'prometheus-client-without-opentelemetry',
  setup(build) {
    build.onResolve({ filter: /^@opentelemetry\/api$/ }, (args) =>
      args.importer.includes('/node_modules/@prometheus-io/client/') ? { path: 'otel-unused', namespace: 'b2b-stub' } : undefined);
  },
};

// The config schema and the Weblate schemas as plain JSON in the bundle: TypeBox only builds them
// (~180 KB of library code at start-up), and every runtime reader (defaults, env names, redaction,
// the prebuilt validators) sees a plain JSON Schema. TypeBox's symbol keys are not read at run time;
// test/e2e/module-footprint.test.ts checks that typebox stays out of `run`, and the config tests run
// on the built CLI too.
const asJson = (module) => Object.entries(module).map(([name, value]) => `export const ${name} = ${JSON.stringify(value)};`).join('\n');
const frozenSchema = {
  name: 'schemas-as-json',
  setup(build) {
    build.onLoad({ filter: /[\\/]dist[\\/]lib[\\/]config[\\/]schema\.js$/ }, () => ({ contents: asJson(schemaModule), loader: 'js' }));
    build.onLoad({ filter: /[\\/]dist[\\/]lib[\\/]localization[\\/]weblate-schemas\.js$/ }, () => ({ contents: asJson(weblateSchemas), loader: 'js' }));
  },
};

/** What both bundles of the sidecar's code share: the ES module bundle and the plain `run` file. */
const sidecarBundle = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  minify: true,
  // No keepNames: it wraps every function expression in a defineProperty call, which ran for each
  // closure created per request (~3 % of the proxy's CPU). Error classes name themselves.
  keepNames: false,
  sourcemap: true,
  logLevel: 'error',
  plugins: [undiciWithoutHttp2, unusedOtel, frozenSchema],
};

// Chunk names carry content hashes: clear the old ones so no stale chunk ships.
await rm('dist/lib/bundle', { recursive: true, force: true });
await build({
  ...sidecarBundle,
  entryPoints: { cli: 'dist/lib/entry/cli-bundle.js' }, // dist/lib/bundle/cli.js, which the launcher imports
  outdir: 'dist/lib/bundle',
  splitting: true,
  format: 'esm',
  // CommonJS dependencies call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __b2bRequire } from 'node:module'; const require = __b2bRequire(import.meta.url);" },
});

// validate-config.js requires the prebuilt validator at run time (so the ESM bundle and the tests
// can fall back to compiling the schema); in the one-file build it is bundled instead: it then
// comes from the code cache too, with no separate file or node_modules lookup at start-up.
const bundledValidator = {
  name: 'config-validator-bundled',
  setup(build) {
    build.onLoad({ filter: /[\\/]dist[\\/]lib[\\/]config[\\/]validate-config\.js$/ }, async (args) => {
      const code = await readFile(args.path, 'utf8');
      const lookup = 'createRequire(import.meta.url)';
      if (!code.includes(lookup)) throw new Error(`${args.path} no longer has ${lookup}: update scripts/bundle.mjs`);
      // Handed to prebuiltValidator as its require: a static require() of the file, which esbuild bundles.
      const bundled = "function __b2bBundledRequire(id) { if (id !== '../config-validator.cjs') throw new Error(`not bundled: ${id}`); return require('../config-validator.cjs'); }\n";
      return { contents: bundled + code.replace(lookup, '__b2bBundledRequire'), loader: 'js' };
    });
  },
};

// The Redis fleet store's client (ioredis, ~200 KB) in a file of its own beside run.cjs, required
// only when the store opens: run.cjs has no lazy chunks and V8 keeps its whole source (finding 26),
// and most sidecars never use the store. Only the client: the store's own code stays in run.cjs, so
// there is one FleetStoreError class (docs/fleet.md, "Redis").
const redisClientApart = {
  name: 'redis-client-apart',
  setup(build) {
    build.onResolve({ filter: /^ioredis$/ }, () => ({ path: './ioredis.cjs', external: true }));
  },
};
await build({
  ...sidecarBundle,
  entryPoints: [createRequire(import.meta.url).resolve('ioredis')],
  outfile: 'dist/lib/bundle/ioredis.cjs',
  format: 'cjs',
});

// The plain `run` as one CommonJS file (src/entry/run-bundle.ts): the ES module loader resolved,
// loaded and compiled ~22 chunk files for it one by one. Same plugins as the ESM bundle, no splitting.
await build({
  ...sidecarBundle,
  entryPoints: ['dist/lib/entry/run-bundle.js'],
  outfile: 'dist/lib/bundle/run.cjs',
  format: 'cjs',
  plugins: [...sidecarBundle.plugins, bundledValidator, redisClientApart],
  // Modules that find files beside themselves (the config validator) read import.meta.url.
  define: { 'import.meta.url': '__b2bImportMetaUrl' },
  banner: { js: "var __b2bImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
});

// Its V8 code cache (src/entry/code-cache.ts) from evaluating every module; the build's next step,
// scripts/warm-code-cache.mjs, replaces it with one made after a warm start. Made by the node that
// builds, i.e. the one that runs it (the Dockerfile builds with the runtime's image); any other
// node rejects it and compiles the file as before.
const { loadCommonJs } = await import('../dist/lib/entry/code-cache.js');
await writeFile('dist/lib/bundle/run.cjs.v8cache', loadCommonJs(resolve('dist/lib/bundle/run.cjs')).createCache());

// dist/cli.js: the launcher (src/launch.ts) in one CommonJS file; the bundles it chooses between stay external.
const bundlesExternal = {
  name: 'bundles-external',
  setup(build) {
    build.onResolve({ filter: /^\.\/lib\/bundle\// }, (args) => ({ path: args.path, external: true }));
  },
};
await build({
  entryPoints: ['dist/lib/entry/launcher.js'],
  outfile: 'dist/cli.js',
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  logLevel: 'error',
  plugins: [bundlesExternal],
  define: { 'import.meta.url': '__b2bImportMetaUrl' },
  banner: { js: "#!/usr/bin/env node\n'use strict';\n// Entry point: see src/entry/launcher.ts and scripts/bundle.mjs.\nvar __b2bImportMetaUrl = require('node:url').pathToFileURL(__filename).href;" },
});
await chmod('dist/cli.js', 0o755);
