// Writes dist/lib/bundle/run.cjs.v8cache after a warm start (src/entry/code-cache.ts): runs the
// plain `run` from run.cjs against the simulated B2B service until the first token, then saves what
// V8 compiled by then (module evaluation and every start-up function), so a real start compiles
// almost nothing. Run by `npm run build` after scripts/bundle.mjs, in a process of its own:
// `node scripts/warm-code-cache.mjs DIST`. V8 takes a cache only under the flags it was made with,
// so the V8 tuning `run` applies after loading (src/shared/v8-tuning.ts) is skipped here: a real
// start compiles before that tuning too.
//
// V8 accepts a cache only from its own version: the build must run on the Node that ships (the
// image's build stage uses the runtime stage's base image; a checkout says it in .node-version).
import v8 from 'node:v8';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const lib = join(resolve(process.argv[2] ?? 'dist'), 'lib');
// WARM_CODE_CACHE_TIMEOUT_MS: a test on a loaded machine gives it longer.
const deadlineMs = Number(process.env.WARM_CODE_CACHE_TIMEOUT_MS) || 20_000;
// The builder's environment must not steer the warm start, or two builders' caches differ
// (docs/traps.md T57): B2B_* overrides, systemd's NOTIFY_SOCKET or LISTEN_FDS, proxy variables and
// NODE_DEBUG each make `run` take other code paths.
const KEEP = new Set(['PATH', 'HOME', 'TMPDIR', 'TMP', 'TEMP']);
for (const name of Object.keys(process.env)) if (!KEEP.has(name)) delete process.env[name];
const pinned = existsSync('.node-version') ? readFileSync('.node-version', 'utf8').trim() : undefined;
if (pinned && pinned !== process.versions.node) {
  process.stderr.write(`warm-code-cache: WARNING: built by Node ${process.versions.node}, but the runtime that ships is ${pinned} (.node-version), which will reject this code cache (a slower start); build with scripts/ensure-node.sh's node first on PATH\n`);
}
const { createB2bSimulator } = await import(join(lib, 'simulator/b2b-simulator.js'));
const { generateTlsMaterial } = await import(join(lib, 'simulator/certs.js'));
const { loadCommonJs } = await import(join(lib, 'entry/code-cache.js'));

const work = mkdtempSync(join(tmpdir(), 'b2b-warm-'));
const tls = await generateTlsMaterial(['127.0.0.1']);
writeFileSync(join(work, 'ca.pem'), tls.caPem);
const simulator = createB2bSimulator({ apiKey: 'warm-api-key', password: 'warm-password', ttlSeconds: 900, tls });
const { url } = await simulator.start();
const config = join(work, 'sidecar.yaml');
// The same kind of set-up as production: a service with its own CA file, credentials, both listeners.
writeFileSync(config, `listen: {port: 0}\nadmin: {port: 0}\nservice: {baseUrl: "${url}", caFile: ${join(work, 'ca.pem')}}\n` +
  'credentials: {apiKey: warm-api-key, password: warm-password}\n');

v8.setFlagsFromString = () => {};
const file = loadCommonJs(join(lib, 'bundle/run.cjs'));
const give = (code, message) => {
  process.stderr.write(message);
  rmSync(work, { recursive: true, force: true });
  process.exit(code);
};
// A failure costs only start-up time: warn and keep the evaluation-only cache (the build goes on).
setTimeout(() => give(0, `warm-code-cache: WARNING: no token within ${deadlineMs / 1000} s; dist/lib/bundle/run.cjs.v8cache stays the one from evaluation alone\n`), deadlineMs);
// The sidecar's log goes to stdout: the first token ends the warm-up.
process.stdout.write = (chunk) => {
  if (String(chunk).includes('"token obtained"')) {
    writeFileSync(join(lib, 'bundle/run.cjs.v8cache'), file.createCache());
    give(0, '');
  }
  return true;
};
file.exports.main(['run', '--config', config]);
