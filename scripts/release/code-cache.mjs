// The release's V8 code cache (docs/traps.md T57): warm starts by the shipped node with V8's seeds
// fixed and its helper threads off (`--predictable --random-seed=1`), from scratch each time, until
// two of them give the same bytes. The cache holds what the warm start had run by its first token,
// and that depends on timing: a machine that stalls the warm start for a second (a loaded CI host)
// lets a histogram's observe or a timer's callback run before the token, or not, and the cache
// comes out a few hundred bytes longer or shorter. The outcomes are few, so of up to four warm
// starts two agree unless the flags are missing, when every one differs. Two agreeing is what a
// quiet machine gives every time; a builder whose warm starts stalled twice alike could still
// agree on another outcome, so two builders' caches are compared, not assumed equal.
// `node scripts/release/code-cache.mjs NODE DIST`: the CLI the test runs; release.mjs imports it.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WARM_START_FLAGS = ['--predictable', '--random-seed=1'];
const WARM_UP = join(dirname(fileURLToPath(import.meta.url)), '../warm-code-cache.mjs');
/** The checkout: the warm-up compares the node it runs on with its .node-version. */
const REPO = resolve(dirname(WARM_UP), '..');

export class CodeCacheNotReproducible extends Error {}

/**
 * Makes DIST/lib/bundle/run.cjs.v8cache with NODE; returns the bytes and which warm starts agreed.
 * `flags` is for the test that shows they are needed.
 * Throws CodeCacheNotReproducible, naming each outcome and what each warm start said on stderr,
 * when no two of `attempts` agree, and Error when a warm start fails.
 */
export function makeReproducibleCodeCache({ node, dist, attempts = 4, env = process.env, flags = WARM_START_FLAGS, log = (line) => process.stderr.write(`${line}\n`) }) {
  const cacheFile = join(resolve(dist), 'lib/bundle/run.cjs.v8cache');
  // NODE_OPTIONS from the builder's shell would load other code (--import) or change V8's flags,
  // and with them the cache or whether a plain node takes it.
  const { NODE_OPTIONS: _builders, ...childEnv } = env;
  const seen = new Map(); // sha256 → the warm starts (1-based) that gave it
  const said = [];
  for (let attempt = 1; attempt <= attempts; attempt++) {
    rmSync(cacheFile, { force: true }); // a warm start writes what it took from an existing cache in that cache's order
    const child = spawnSync(node, [...flags, WARM_UP, dist], { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', env: childEnv });
    if (child.error) throw new Error(`warm start ${attempt} could not be run with ${node}: ${child.error.message}`);
    const stderr = child.stderr.trim();
    said.push(stderr);
    if (stderr) log(`warm start ${attempt}: ${stderr}`);
    if (child.status !== 0) throw new Error(`warm start ${attempt} ended with ${child.status ?? child.signal}: ${stderr}`);
    // No file: the warm start gave up before its first token (it said why on stderr).
    if (!existsSync(cacheFile)) throw new Error(`warm start ${attempt} wrote no code cache: ${stderr || 'it said nothing'}`);
    const bytes = readFileSync(cacheFile);
    const digest = createHash('sha256').update(bytes).digest('hex');
    const runs = [...(seen.get(digest)?.runs ?? []), attempt];
    seen.set(digest, { runs, length: bytes.length });
    if (runs.length === 2) {
      writeFileSync(cacheFile, bytes);
      return { bytes, digest, agreed: runs, attempts: attempt };
    }
  }
  rmSync(cacheFile, { force: true });
  const outcomes = [...seen].map(([digest, o]) => `warm start ${o.runs.join(', ')}: ${o.length} bytes, sha256 ${digest.slice(0, 12)}`);
  throw new CodeCacheNotReproducible(`no two of ${attempts} warm starts made the same code cache (${outcomes.join('; ')}); they said: ${JSON.stringify(said)}`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [node, dist] = process.argv.slice(2);
  if (!node || !dist) {
    process.stderr.write('usage: node scripts/release/code-cache.mjs NODE DIST\n');
    process.exit(2);
  }
  try {
    const made = makeReproducibleCodeCache({ node, dist });
    process.stdout.write(`${JSON.stringify({ length: made.bytes.length, sha256: made.digest, agreed: made.agreed, attempts: made.attempts })}\n`);
  } catch (err) {
    process.stderr.write(`code-cache: ${err.message}\n`);
    process.exit(1);
  }
}
