import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname } from 'node:path';
import { Script } from 'node:vm';

/**
 * Loads a CommonJS file with a V8 code cache beside it (`<file>.v8cache`, written by the build:
 * scripts/warm-code-cache.mjs after a warm start, or scripts/bundle.mjs after evaluation alone),
 * so V8 neither parses nor compiles what the cache holds (the start-up time of `run`; bench/results/findings.md). Without a usable cache the file compiles as
 * usual: V8 rejects data from another V8 version or other flags (`cachedDataRejected`), and the
 * cache names the SHA-1 of the source it was made from, because V8 itself only compares the
 * source's length and would run stale code for an edited file of the same length.
 */
export function loadCommonJs(filename: string): CommonJsFile {
  const bytes = readFileSync(filename);
  // The bundle is ASCII (esbuild's default charset): latin1 is the cheapest exact decoding.
  const source = bytes.toString('latin1');
  const digest = createHash('sha1').update(bytes).digest();
  const cachedData = cacheFor(filename, digest);
  // The wrapper sits on a line of its own (lineOffset -1) so positions match the file and its source map.
  const script = new Script(`(function (exports, require, module, __filename, __dirname) {\n${source}\n})`, {
    filename: scriptName(filename),
    lineOffset: -1,
    cachedData,
  });
  const module = { exports: {} as unknown };
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(filename), module, filename, dirname(filename));
  return {
    exports: module.exports,
    cacheUsed: cachedData !== undefined && !script.cachedDataRejected,
    createCache: () => Buffer.concat([digest, script.createCachedData()]),
  };
}

export interface CommonJsFile {
  exports: unknown;
  /** Whether V8 took its code from the cache. */
  cacheUsed: boolean;
  /** The cache file's contents for the file as compiled so far (call after evaluating what start-up runs). */
  createCache(): Buffer;
}

/**
 * The name stack traces show for the file. Not its path: a script compiled from a cache keeps the
 * name it had when the cache was made, so the build's directory (a developer's home, the image's
 * build stage) would be written into the shipped cache and shown in every trace of a running sidecar.
 */
function scriptName(filename: string): string {
  return `b2b-sidecar/dist/lib/bundle/${basename(filename)}`;
}

const DIGEST_BYTES = 20;

/** The V8 data of `<file>.v8cache` when it was made from these bytes, else undefined. */
function cacheFor(filename: string, digest: Buffer): Buffer | undefined {
  let data: Buffer;
  try {
    data = readFileSync(`${filename}.v8cache`);
  } catch {
    return undefined;
  }
  return data.length > DIGEST_BYTES && digest.equals(data.subarray(0, DIGEST_BYTES)) ? data.subarray(DIGEST_BYTES) : undefined;
}
