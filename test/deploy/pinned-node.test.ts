import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
// @ts-expect-error plain JavaScript on purpose (it runs on the unsupported lines too), without types
import { runsAsIs, satisfies } from '../../scripts/pinned-node.mjs';

/**
 * scripts/pinned-node.mjs, through which `npm test` and `npm run demo` run: on a host whose node is
 * not a supported line (a machine image with Node 20) the command runs on the pinned Node that
 * scripts/ensure-node.sh provides, as in CI; on a supported node it runs as it is.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string }; scripts: Record<string, string> };
const PINNED = readFileSync(join(ROOT, '.node-version'), 'utf8').trim();
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const work = mkdtempSync(join(tmpdir(), 'b2b-pinned-node-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** A copy of the wrapper with its own package.json, .node-version and ensure-node.sh (the real one unless given). */
function fakeRoot(name: string, options: { engines?: string; pinned?: string; ensureNode?: string }): string {
  const root = join(work, name);
  mkdirSync(join(root, 'scripts'), { recursive: true });
  copyFileSync(join(ROOT, 'scripts/pinned-node.mjs'), join(root, 'scripts/pinned-node.mjs'));
  writeFileSync(join(root, 'package.json'), JSON.stringify({ type: 'module', engines: { node: options.engines ?? PACKAGE.engines.node } }));
  writeFileSync(join(root, '.node-version'), `${options.pinned ?? PINNED}\n`);
  if (options.ensureNode) writeFileSync(join(root, 'scripts/ensure-node.sh'), options.ensureNode);
  else copyFileSync(join(ROOT, 'scripts/ensure-node.sh'), join(root, 'scripts/ensure-node.sh'));
  return root;
}

/** A cache folder (XDG_CACHE_HOME) holding a `node` of `version` where ensure-node.sh looks: a fake, or a link to a real one. */
function cacheWith(version: string, realBin?: string): string {
  const cache = mkdtempSync(join(work, 'cache-'));
  const dir = join(cache, 'b2b-sidecar', `node-${version}-linux-${ARCH}`);
  if (realBin) {
    mkdirSync(dirname(dir), { recursive: true });
    symlinkSync(dirname(realBin), dir);
  } else {
    mkdirSync(join(dir, 'bin'), { recursive: true });
    writeFileSync(join(dir, 'bin/node'), `#!/bin/sh\necho ${version}\n`);
    chmodSync(join(dir, 'bin/node'), 0o755);
  }
  return cache;
}

/** Runs `node <root>/scripts/pinned-node.mjs ...args` with `node` (a binary) and only system tools on PATH. */
function wrap(node: string, root: string, cache: string, args: string[]) {
  const run = spawnSync(node, [join(root, 'scripts/pinned-node.mjs'), ...args], {
    encoding: 'utf8', timeout: 60_000,
    env: { PATH: [dirname(node), '/usr/bin', '/bin'].join(':'), HOME: work, XDG_CACHE_HOME: cache },
  });
  return { status: run.status, stdout: run.stdout.trim(), stderr: run.stderr };
}

describe('scripts/pinned-node.mjs', () => {
  it('tells the supported lines from package.json engines, and the pinned line for the test suite', () => {
    const engines = '^22.13.0 || ^24.0.0 || >=26.0.0';
    for (const [version, ok] of [['v20.20.2', false], ['v22.12.0', false], ['v22.13.0', true], ['v23.11.0', false], ['v24.0.0', true], ['v26.1.0', true], ['v27.0.0', true]] as const) {
      assert.equal(satisfies(version, engines), ok, version);
    }
    const pinned = { engines, pinned: '24.21.0', pinnedLine: true };
    assert.equal(runsAsIs('v24.21.0', pinned), true);
    assert.equal(runsAsIs('v24.30.1', pinned), true);
    assert.equal(runsAsIs('v24.20.0', pinned), false, 'older than the pinned version');
    assert.equal(runsAsIs('v22.23.3', pinned), false, 'another supported line: the suite is written for the pinned one');
    assert.equal(runsAsIs('v22.23.3', { ...pinned, pinnedLine: false }), true);
  });

  it('runs the command as it is on a supported node: its node is the one on PATH, nothing is said', () => {
    const r = wrap(process.execPath, ROOT, join(work, 'no-cache'), ['node -p process.version; exit 3']);
    assert.equal(r.status, 3, 'the command\'s exit code');
    assert.equal(r.stdout, process.version);
    assert.equal(r.stderr, '');
  });

  it('on an unsupported node: runs the command on the node ensure-node.sh gives, saying so in one line', () => {
    const root = fakeRoot('unsupported', { engines: '^99.0.0', pinned: '99.1.2' });
    const r = wrap(process.execPath, root, cacheWith('99.1.2'), ['node -p process.version']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, '99.1.2', 'the command ran the pinned node');
    assert.match(r.stderr, new RegExp(`^b2b-sidecar: node ${process.version.replace(/\./g, '\\.')} is not a supported line \\(\\^99\\.0\\.0\\): running on the pinned Node 99\\.1\\.2 from .*scripts/ensure-node\\.sh, as CI does\\)\\n$`));
  });

  it('--pinned-line: another supported line switches too (the suite is written for the pinned line)', () => {
    const [major] = process.versions.node.split('.');
    const pinned = `${major}.999.0`;
    const r = wrap(process.execPath, fakeRoot('line', { pinned }), cacheWith(pinned), ['--pinned-line', 'node -p process.version']);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, pinned);
    assert.match(r.stderr, new RegExp(`is not the ${major}\\.x line: running on the pinned Node ${pinned.replace(/\./g, '\\.')}`));
  });

  it('when the pinned node cannot be had: one line naming the fix, exit 1, the command not run', () => {
    const root = fakeRoot('no-fetch', { engines: '^99.0.0', ensureNode: '#!/usr/bin/env bash\necho "ensure-node: offline" >&2\nexit 1\n' });
    const r = wrap(process.execPath, root, join(work, 'no-cache'), ['echo ran']);
    assert.equal(r.status, 1);
    assert.equal(r.stdout, '');
    assert.equal(r.stderr.split('\n').filter((l) => l.startsWith('b2b-sidecar:')).length, 1);
    assert.match(r.stderr, new RegExp(`could not be fetched \\(scripts/ensure-node\\.sh exited 1\\): install Node ${PINNED.replace(/\./g, '\\.')} \\(\\.node-version\\) and put it first on PATH`));
  });

  // The machine image's own node (20 on the CI image) is the case the README's two commands meet.
  const hostNodes = ['/usr/bin/node', '/usr/local/bin/node'].filter((file) => existsSync(file) && process.versions.node === PINNED
    && !satisfies(spawnSync(file, ['-v'], { encoding: 'utf8' }).stdout.trim(), PACKAGE.engines.node));
  for (const host of hostNodes) {
    it(`the host's ${host} (not a supported line) runs npm test's and npm run demo's command on the pinned Node`, () => {
      const r = wrap(host, ROOT, cacheWith(PINNED, process.execPath), ['--pinned-line', 'node -p process.version']);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout, `v${PINNED}`);
    });
  }

  it('is what npm test and npm run demo run through', () => {
    assert.match(PACKAGE.scripts.test!, /^exec node scripts\/pinned-node\.mjs --pinned-line "npm run build && .*"$/);
    assert.match(PACKAGE.scripts.demo!, /^exec node scripts\/pinned-node\.mjs "npm run build --silent && exec node dist\/cli\.js demo"$/);
  });
});
