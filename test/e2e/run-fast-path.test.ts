import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { plainRunArgs } from '../../src/entry/plain-run-args.js';
import { assertBuildIsCurrent, runCli } from '../helpers/cli.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const COMMANDER_CLI = join(ROOT, 'dist/lib/bundle/cli.js');

/**
 * The plain `run` fast path: dist/cli.js loads dist/lib/bundle/run.cjs with its V8 code cache
 * instead of the ESM bundle with commander. It must behave exactly as the commander path, and a
 * missing, corrupt or stale cache must only cost time.
 */
// These run dist/: fail fast, with the reason, when it is older than src/.
assertBuildIsCurrent();

describe('the plain `run` fast path', () => {
  it('takes only command lines whose meaning is certain; the rest go to commander', () => {
    assert.deepEqual(plainRunArgs(['run']), {});
    assert.deepEqual(plainRunArgs(['run', '--config', 'a.yaml']), { config: 'a.yaml' });
    assert.deepEqual(plainRunArgs(['run', '-c', 'a.yaml']), { config: 'a.yaml' });
    assert.deepEqual(plainRunArgs(['run', '--config=a.yaml']), { config: 'a.yaml' });
    for (const argv of [[], ['token'], ['run', '--help'], ['run', '-h'], ['run', '--config'], ['run', '--config='], ['run', '--config', ''],
      ['run', '--config', '--help'], ['run', '-c', 'a', '-c', 'b'], ['run', '-ca.yaml'], ['run', 'extra'], ['run', '--config', 'a', '--'], ['--config', 'a', 'run']]) {
      assert.equal(plainRunArgs(argv), undefined, argv.join(' '));
    }
  });

  it('gives the same output and exit code as commander for each plain form', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-fast-'));
    const missing = join(dir, 'missing.yaml');
    const env = { PATH: process.env.PATH };
    for (const argv of [['run', '--config', missing], ['run', '-c', missing], ['run', `--config=${missing}`], ['run']]) {
      const fast = await runCli(argv, env);
      const viaCommander = await runNode([COMMANDER_CLI, ...argv], env);
      assert.equal(fast.code, 2, argv.join(' '));
      assert.deepEqual(fast, viaCommander, argv.join(' '));
    }
    for (const argv of [['run', '--bogus'], ['run', '--config'], ['run', '--help']]) {
      assert.deepEqual(await runCli(argv, env), await runNode([COMMANDER_CLI, ...argv], env), argv.join(' '));
    }
  });

  it('loads every built-in module start-up needs before it tunes V8 (Node compiles later ones without its code cache)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-fast-'));
    const preload = join(dir, 'record.cjs');
    writeFileSync(preload, `
      const v8 = require('node:v8');
      const set = v8.setFlagsFromString;
      let tunedAt;
      v8.setFlagsFromString = (flags) => { tunedAt ??= process.moduleLoadList.length; set(flags); };
      require('node:module').syncBuiltinESMExports();
      const write = process.stdout.write.bind(process.stdout);
      process.stdout.write = (chunk, ...rest) => {
        if (String(chunk).includes('"sidecar started"')) {
          process.stderr.write('after tuning: ' + JSON.stringify(process.moduleLoadList.slice(tunedAt).filter((m) => m.startsWith('NativeModule'))) + '\\n');
        }
        return write(chunk, ...rest);
      };`);
    const { stderr } = await startAndStop(ROOT, ['--require', preload]);
    assert.match(stderr, /^after tuning: \[\]$/m);
  });

  const copies: string[] = [];
  after(() => { for (const c of copies) rmSync(c, { recursive: true, force: true }); });
  /** dist/ copied with package.json and node_modules linked, so the copy runs as the original. */
  function distCopy(): string {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-fast-dist-'));
    copies.push(dir);
    cpSync(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
    cpSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
    return dir;
  }

  it('fails a command line whose bundle cannot load with exit 1, whatever --unhandled-rejections says (the image\'s HEALTHCHECK runs it)', () => {
    const broken = distCopy();
    rmSync(join(broken, 'dist/lib/bundle/cli.js'));
    for (const mode of ['throw', 'warn', 'none']) {
      const { status, stderr } = spawnSync(process.execPath, [`--unhandled-rejections=${mode}`, join(broken, 'dist/cli.js'), '--version'], { encoding: 'utf8' });
      assert.equal(status, 1, `--unhandled-rejections=${mode}`);
      assert.match(stderr, /Cannot find module .*lib\/bundle\/cli\.js/, mode);
    }
  });

  describe('code cache', () => {
    const cacheUsed = (dir: string) => execFileSync(process.execPath, ['--input-type=module', '-e',
      `const { loadCommonJs } = await import(${JSON.stringify(join(dir, 'dist/lib/entry/code-cache.js'))});
       process.stdout.write(String(loadCommonJs(${JSON.stringify(join(dir, 'dist/lib/bundle/run.cjs'))}).cacheUsed));`], { encoding: 'utf8' });

    it('is made by the build and taken by this node', () => {
      assert.equal(cacheUsed(ROOT), 'true');
    });

    it('holds code only: no value of the build\'s warm start (its credentials, its temporary paths), nor the build\'s directory', () => {
      const cache = readFileSync(join(ROOT, 'dist/lib/bundle/run.cjs.v8cache'), 'latin1');
      for (const value of ['warm-api-key', 'warm-password', 'b2b-warm-', ROOT]) assert.ok(!cache.includes(value), value);
    });

    it('names the file the same in stack traces wherever the package is installed, cache or not', () => {
      const where = (dir: string) => execFileSync(process.execPath, ['--input-type=module', '-e',
        `const { loadCommonJs } = await import(${JSON.stringify(join(dir, 'dist/lib/entry/code-cache.js'))});
         const file = loadCommonJs(${JSON.stringify(join(dir, 'dist/lib/bundle/run.cjs'))});
         try { file.exports.main(['not-a-plain-run']); } catch (err) { process.stdout.write(file.cacheUsed + ' ' + err.stack.split('\\n')[1]); }`], { encoding: 'utf8' });
      const moved = distCopy();
      const cold = distCopy();
      rmSync(join(cold, 'dist/lib/bundle/run.cjs.v8cache'));
      for (const [dir, cached] of [[moved, 'true'], [cold, 'false']] as const) {
        const out = where(dir);
        const used = out.slice(0, out.indexOf(' '));
        const frame = out.slice(out.indexOf(' ') + 1);
        assert.equal(used, cached, dir);
        assert.match(frame, /\(b2b-sidecar\/dist\/lib\/bundle\/run\.cjs:\d+:\d+\)/, frame);
        assert.ok(!frame.includes(ROOT), frame);
      }
    });

    it('starts `run` as usual when the cache is absent, corrupt, or made for other source bytes', async () => {
      const absent = distCopy();
      rmSync(join(absent, 'dist/lib/bundle/run.cjs.v8cache'));
      const corrupt = distCopy();
      const data = readFileSync(join(corrupt, 'dist/lib/bundle/run.cjs.v8cache'));
      data.fill(0x5a, 20);
      writeFileSync(join(corrupt, 'dist/lib/bundle/run.cjs.v8cache'), data);
      const truncated = distCopy();
      writeFileSync(join(truncated, 'dist/lib/bundle/run.cjs.v8cache'), data.subarray(0, 10));
      // Same length, other bytes: V8 would take its cache for it (it only compares the length), so
      // the old message would be logged. The digest beside the cache must send it to the compiler.
      const edited = distCopy();
      const run = join(edited, 'dist/lib/bundle/run.cjs');
      const source = readFileSync(run, 'latin1');
      assert.ok(source.includes('"sidecar started"'));
      writeFileSync(run, source.replace('"sidecar started"', '"SIDECAR started"'), 'latin1');
      for (const dir of [absent, corrupt, truncated, edited]) assert.equal(cacheUsed(dir), 'false', dir);
      for (const [dir, message] of [[absent, 'sidecar started'], [corrupt, 'sidecar started'], [truncated, 'sidecar started'], [edited, 'SIDECAR started']] as const) {
        assert.match((await startAndStop(dir)).stdout, new RegExp(`"message":"${message}"`), dir);
      }
    });
  });
});

/** Starts `run` from a dist copy against an unreachable service, waits for the start line, stops it with SIGTERM (exit 0). */
async function startAndStop(dir: string, nodeArgs: string[] = []): Promise<{ stdout: string; stderr: string }> {
  const config = join(mkdtempSync(join(tmpdir(), 'b2b-fast-run-')), 'sidecar.yaml');
  writeFileSync(config, 'listen: {port: 0}\nadmin: {port: 0}\nservice: {baseUrl: "https://127.0.0.1:1"}\n' +
    'credentials: {apiKey: k-0123456789, password: p-0123456789}\nshutdown: {delaySeconds: 0, timeoutSeconds: 1}\n');
  const child = spawn(process.execPath, [...nodeArgs, join(dir, 'dist/cli.js'), 'run', '--config', config], { env: { PATH: process.env.PATH } });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await new Promise<void>((resolve, reject) => {
    const limit = setTimeout(() => reject(new Error(`no start line; stdout: ${out}; stderr: ${err}`)), 15_000);
    child.stdout.on('data', (d) => {
      out += d;
      if (/started"/.test(out)) { clearTimeout(limit); resolve(); }
    });
  });
  child.kill('SIGTERM');
  assert.equal(await exited, 0, err);
  return { stdout: out, stderr: err };
}

function runNode(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, args, { env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}
