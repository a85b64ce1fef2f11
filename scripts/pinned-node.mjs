// Runs a shell command (the npm scripts `test` and `demo`) on a supported Node, so the README's
// `npm ci && npm test` and `npm ci && npm run demo` work on a host whose own node is another line
// (a machine image with Node 20):
//
//   node scripts/pinned-node.mjs [--pinned-line] "COMMAND"
//
// When the node running this script satisfies package.json's `engines` (with --pinned-line: is the
// line of .node-version, at that version or later, which the whole test suite is written for) the
// command runs as it is. Otherwise the pinned Node comes from scripts/ensure-node.sh, as CI gets it
// (the npm registry's binary package, cached under ~/.cache/b2b-sidecar), and the command runs with
// its bin directory first on PATH, so every `node` the command starts is the pinned one. One line on
// stderr says so; when the pinned Node cannot be had, one line says why and what to do, at once.
// Deliberately plain JavaScript that old Node lines still run: it is the one piece that runs on them.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** [major, minor, patch] of `24.21.0` or `v24.21.0`. */
export function parseVersion(text) {
  const m = /^v?(\d+)\.(\d+)\.(\d+)/.exec(String(text).trim());
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

function compare(a, b) {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

/** Whether `version` satisfies an `engines` range of `^X.Y.Z` and `>=X.Y.Z` terms joined by `||`. */
export function satisfies(version, range) {
  const v = parseVersion(version);
  if (!v) return false;
  return range.split('||').some((term) => {
    const m = /^\s*(\^|>=)\s*(\d+\.\d+\.\d+)\s*$/.exec(term);
    if (!m) return false;
    const floor = parseVersion(m[2]);
    return compare(v, floor) >= 0 && (m[1] === '>=' || v[0] === floor[0]);
  });
}

/** Whether `version` can run the command as it is: in `engines`, or (pinnedLine) the pinned line, not older. */
export function runsAsIs(version, { engines, pinned, pinnedLine }) {
  if (!pinnedLine) return satisfies(version, engines);
  const v = parseVersion(version);
  const p = parseVersion(pinned);
  return Boolean(v && p && v[0] === p[0] && compare(v, p) >= 0);
}

function main() {
  const args = process.argv.slice(2);
  const pinnedLine = args[0] === '--pinned-line';
  const command = (pinnedLine ? args.slice(1) : args).join(' ');
  if (!command) {
    process.stderr.write('usage: node scripts/pinned-node.mjs [--pinned-line] "COMMAND"\n');
    process.exit(2);
  }
  const engines = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node;
  const pinned = readFileSync(join(root, '.node-version'), 'utf8').trim();
  const env = { ...process.env };
  if (!runsAsIs(process.version, { engines, pinned, pinnedLine })) {
    const wanted = pinnedLine ? `the ${parseVersion(pinned)[0]}.x line` : `a supported line (${engines})`;
    const ensured = spawnSync('bash', [join(root, 'scripts', 'ensure-node.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const bin = ensured.status === 0 ? ensured.stdout.trim() : '';
    if (!bin) {
      const why = ensured.error ? `bash could not be started (${ensured.error.code})` : `scripts/ensure-node.sh exited ${ensured.status}`;
      process.stderr.write(`b2b-sidecar: node ${process.version} is not ${wanted} and the pinned Node ${pinned} could not be fetched (${why}): install Node ${pinned} (.node-version) and put it first on PATH\n`);
      process.exit(1);
    }
    process.stderr.write(`b2b-sidecar: node ${process.version} is not ${wanted}: running on the pinned Node ${pinned} from ${bin} (scripts/ensure-node.sh, as CI does)\n`);
    const key = Object.keys(env).find((k) => k.toUpperCase() === 'PATH') ?? 'PATH';
    env[key] = `${bin}${delimiter}${env[key] ?? ''}`;
  }
  const child = spawn(command, { shell: true, stdio: 'inherit', env });
  // npm signals its script's process (this one) only: pass every stop on to the command.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => {
    if (signal) {
      process.removeAllListeners(signal);
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}

// Run as a script (possibly through a symlink), not imported by its test.
if (process.argv[1] && realpathSync(fileURLToPath(import.meta.url)) === realpathSync(process.argv[1])) main();
