import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { assertBuildIsCurrent } from '../helpers/cli.js';

const BUNDLE_RUN = fileURLToPath(new URL('../../dist/lib/bundle/', import.meta.url));

/**
 * What the `run` path loads, checked on the built bundle. Each of these once cost start-up time
 * and resident memory (bench/results/findings.md); a casual `import 'undici'` or
 * `import express` would bring them back without failing any behaviour test.
 */
// These run dist/: fail fast, with the reason, when it is older than src/.
assertBuildIsCurrent();

describe('module footprint of `run`', () => {
  it('loads neither undici\'s entry point, nor Node\'s bundled undici, nor express, ajv, node:http2, prom-client or the Prometheus client\'s Pushgateway and Summary', () => {
    // Import the run command's chunk exactly as the CLI does, without running it.
    const script = `
      import { readdirSync } from 'node:fs';
      import { createRequire } from 'node:module';
      const dir = ${JSON.stringify(BUNDLE_RUN)};
      const run = readdirSync(dir).find((f) => /^run-[A-Z0-9]+\\.js$/.test(f));
      await import(dir + run);
      const cjs = Object.keys(createRequire(import.meta.url).cache);
      process.stdout.write(JSON.stringify({
        run,
        internalUndici: process.moduleLoadList.some((m) => m.includes('internal/deps/undici')),
        // undici's unused HTTP/2 client gets a stub in the bundle (scripts/bundle.mjs).
        http2: process.moduleLoadList.includes('NativeModule http2'),
        cjs,
      }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { run?: string; internalUndici: boolean; http2: boolean; cjs: string[] };
    assert.ok(out.run, 'the run command chunk exists in dist/lib/bundle');
    // From Node 22 an ES module that imports node:http gets Node's bundled undici whatever it uses:
    // building the module namespace reads http's lazy WebSocket/MessageEvent getters. The plain
    // `run` (run.cjs, below) requires node:http and must not load it on any runtime.
    // (Node 24's bundled undici then loads node:http2 as well.)
    const httpAlone = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e',
      "import 'node:http'; process.stdout.write(JSON.stringify({ undici: process.moduleLoadList.some((m) => m.includes('internal/deps/undici')), http2: process.moduleLoadList.includes('NativeModule http2') }))"], { encoding: 'utf8' })) as { undici: boolean; http2: boolean };
    assert.equal(out.internalUndici, httpAlone.undici, 'Node\'s bundled undici was loaded (something touched fetch/Headers/Response)');
    assert.equal(out.http2, httpAlone.http2, 'node:http2 was loaded');
    // Whatever the bundle still requires from node_modules at run time shows up here...
    const unwanted = ['undici/index.js', 'express/', 'ajv/dist/ajv.js', 'iconv-lite/', '@prometheus-io/client/index.js', '@prometheus-io/client/lib/pushgateway.js', '@prometheus-io/client/lib/summary.js', 'tdigest/', 'prom-client/', '@opentelemetry/api/', '@sinclair/typebox/', 'winston/', 'logform/', 'readable-stream/', 'ioredis/'];
    for (const name of unwanted) {
      assert.ok(!out.cjs.some((f) => f.includes(`node_modules/${name}`)), `${name} was loaded: ${out.cjs.join(', ')}`);
    }
    // ...and what it inlined is in the source maps of the chunks the run command imports.
    const sources = bundledSources(out.run!);
    assert.ok(sources.some((f) => f.includes('node_modules/undici/lib/dispatcher/pool.js')), 'the source-map walk found the bundled dependencies');
    for (const name of unwanted) {
      assert.ok(!sources.some((f) => f.includes(`node_modules/${name}`)), `${name} is bundled into the run command's chunks`);
    }
    // Diagnostics are for the first hour, not for every start.
    assert.ok(!sources.some((f) => /src\/(doctor\/|commands\/doctor)/.test(f)), 'the doctor command is bundled into the run command\'s chunks');
  });
});

describe('module footprint of the plain `run` (dist/lib/bundle/run.cjs, loaded by dist/cli.js)', () => {
  it('loads the same as the run chunk, and neither commander nor any other command', () => {
    // Loading the file only defines main (src/cli-run.ts), so nothing starts. TypeBox names its
    // symbols with Symbol.for when its modules evaluate: recorded to show they do not.
    const script = `
      const symbols = [];
      const symbolFor = Symbol.for;
      Symbol.for = (key) => (symbols.push(key), symbolFor(key));
      const run = require(${JSON.stringify(`${BUNDLE_RUN}run.cjs`)});
      process.stdout.write(JSON.stringify({
        main: typeof run.main,
        internalUndici: process.moduleLoadList.some((m) => m.includes('internal/deps/undici')),
        http2: process.moduleLoadList.includes('NativeModule http2'),
        cjs: Object.keys(require.cache),
        typebox: symbols.some((key) => key.startsWith('TypeBox.')),
      }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as { main: string; internalUndici: boolean; http2: boolean; cjs: string[]; typebox: boolean };
    assert.equal(out.main, 'function');
    // The prebuilt config validator is bundled too (scripts/bundle.mjs), so it comes from the code cache.
    assert.deepEqual(out.cjs, [`${BUNDLE_RUN}run.cjs`], 'run.cjs required other files when it loaded');
    assert.equal(out.internalUndici, false, 'Node\'s bundled undici was loaded (something touched fetch/Headers/Response)');
    assert.equal(out.http2, false, 'node:http2 was loaded');
    const unwanted = ['undici/index.js', 'express/', 'ajv/dist/ajv.js', 'iconv-lite/', '@prometheus-io/client/index.js', '@prometheus-io/client/lib/pushgateway.js', '@prometheus-io/client/lib/summary.js', 'tdigest/', 'prom-client/', '@opentelemetry/api/', '@sinclair/typebox/', 'winston/', 'logform/', 'readable-stream/', 'commander/', 'ioredis/'];
    for (const name of unwanted) assert.ok(!out.cjs.some((f) => f.includes(`node_modules/${name}`)), `${name} was loaded: ${out.cjs.join(', ')}`);
    const { sources } = JSON.parse(readFileSync(`${BUNDLE_RUN}run.cjs.map`, 'utf8')) as { sources: string[] };
    assert.ok(sources.some((f) => f.includes('node_modules/undici/lib/dispatcher/pool.js')), 'the source map lists the bundled dependencies');
    // One file has no lazy chunks, and V8 keeps its whole source while it runs: the localization
    // part (imported only when configured) is in it, but its schemas are plain JSON and its
    // validator prebuilt, so neither TypeBox nor ajv is (finding 26).
    assert.equal(out.typebox, false, 'TypeBox modules were evaluated when run.cjs loaded');
    for (const name of [...unwanted, 'fast-uri/']) assert.ok(!sources.some((f) => f.includes(`node_modules/${name}`)), `${name} is bundled into run.cjs`);
    // Only ajv's small runtime helpers, which the prebuilt validators call.
    const ajv = sources.filter((f) => f.includes('node_modules/ajv/'));
    assert.ok(ajv.every((f) => f.includes('node_modules/ajv/lib/runtime/')), `ajv itself is bundled into run.cjs: ${ajv.join(', ')}`);
    assert.ok(!sources.some((f) => /src\/(cli\.ts|doctor\/|simulator\/|commands\/(?!run|io|config-problems))/.test(f)), `another command is bundled into run.cjs: ${sources.filter((f) => f.includes('src/')).join(', ')}`);
  });

  it('requires the Redis fleet store\'s client from a file of its own, complete, only when the store opens (docs/fleet.md, "Redis")', () => {
    // scripts/bundle.mjs keeps ioredis out of run.cjs (its sources, checked above); a store that
    // opens requires ./ioredis.cjs, which must stand alone.
    const script = `const m = require(${JSON.stringify(`${BUNDLE_RUN}ioredis.cjs`)}); process.stdout.write(JSON.stringify({ redis: typeof m.Redis, cjs: Object.keys(require.cache) }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })) as { redis: string; cjs: string[] };
    assert.equal(out.redis, 'function');
    assert.deepEqual(out.cjs, [`${BUNDLE_RUN}ioredis.cjs`], 'ioredis.cjs required files from node_modules');
  });

  it('is one file: no import() left for the ES module loader', () => {
    assert.doesNotMatch(readFileSync(`${BUNDLE_RUN}run.cjs`, 'utf8'), /\bimport\(/);
  });

  it('is started by dist/cli.js without Node\'s ES module loader, which an ES module entry costs at every start (finding 31)', () => {
    // A plain `run` whose config file is missing goes the whole fast path and exits 2; the
    // preload reports at exit whether Node's ES module loader was loaded. `--version` goes through
    // commander's ES module bundle: there the same probe must see it.
    const dir = mkdtempSync(join(tmpdir(), 'b2b-esm-probe-'));
    try {
      const probe = join(dir, 'probe.cjs');
      // Whether any file was loaded as an ES module (format 'module'), seen by a synchronous load
      // hook; from Node 24 the loader's own code is loaded at every start, so it cannot tell.
      writeFileSync(probe, [
        "let esm = false;",
        "require('node:module').registerHooks({ load(url, context, next) { const r = next(url, context); if (r.format === 'module') esm = true; return r; } });",
        "process.on('exit', () => process.stderr.write(`esm loader: ${esm}\\n`));",
      ].join('\n'));
      const cli = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
      const run = (args: string[]) => spawnSync(process.execPath, ['-r', probe, cli, ...args], { encoding: 'utf8' });
      const plain = run(['run', '--config', join(dir, 'missing.yaml')]);
      assert.equal(plain.status, 2, plain.stderr);
      assert.match(plain.stderr, /does not exist/);
      assert.match(plain.stderr, /^esm loader: false$/m);
      const version = run(['--version']);
      assert.equal(version.status, 0, version.stderr);
      assert.match(version.stderr, /^esm loader: true$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('module footprint of `healthcheck`', () => {
  it('loads the config and node:http only: not the sidecar, the proxy, undici, the Prometheus client or winston (it runs every HEALTHCHECK interval)', () => {
    const chunk = readdirSync(BUNDLE_RUN).find((f) => /^healthcheck-[A-Z0-9]+\.js$/.test(f));
    assert.ok(chunk, 'the healthcheck command chunk exists in dist/lib/bundle');
    const sources = bundledSources(chunk);
    assert.ok(sources.some((f) => f.endsWith('src/config/load-config.ts')), 'the source-map walk found the config loader');
    for (const name of ['src/sidecar.ts', 'src/proxy/proxy-handler.ts', 'node_modules/undici/', 'node_modules/@prometheus-io/client/', 'node_modules/winston/']) {
      assert.ok(!sources.some((f) => f.includes(name)), `${name} is bundled into the healthcheck command's chunks`);
    }
  });
});

/** Original files of a bundle chunk and of every chunk it statically imports (from the source maps). */
function bundledSources(chunk: string, seen = new Set<string>()): string[] {
  if (seen.has(chunk)) return [];
  seen.add(chunk);
  const code = readFileSync(BUNDLE_RUN + chunk, 'utf8');
  const map = JSON.parse(readFileSync(`${BUNDLE_RUN}${chunk}.map`, 'utf8')) as { sources: string[] };
  const out = [...map.sources];
  // Static imports only (`from"../chunk-X.js"`); dynamic import("../x.js") chunks load lazily.
  for (const m of code.matchAll(/(?:from|import)\s*"\.\/([\w-]+\.js)"/g)) out.push(...bundledSources(m[1]!, seen));
  return out;
}
