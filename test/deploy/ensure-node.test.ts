import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';

/**
 * scripts/ensure-node.sh, which makes CI independent of the host's Node: it picks the host's node only
 * when it is the pinned line and not older, and otherwise the pinned version from its cache folder
 * (installed there from the npm registry's binary package; the download itself is exercised by
 * `.ci/run`, not here). The "nodes" below are shell scripts that answer `node -p` with a version.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'scripts/ensure-node.sh');
const PINNED = readFileSync(join(ROOT, '.node-version'), 'utf8').trim();
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const work = mkdtempSync(join(tmpdir(), 'b2b-ensure-node-'));
after(() => rmSync(work, { recursive: true, force: true }));

/** A directory holding a fake `node` that reports `version`. */
function fakeNode(dir: string, version: string): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'node'), `#!/bin/sh\necho ${version}\n`);
  chmodSync(join(dir, 'node'), 0o755);
  return dir;
}

/** Runs the script with only `hostBin` (and the system's tools) on PATH and `cache` as XDG_CACHE_HOME. */
function ensure(hostBin: string | undefined, cache: string, version?: string) {
  const run = spawnSync('bash', [SCRIPT, ...(version ? [version] : [])], {
    encoding: 'utf8',
    env: { PATH: [hostBin, '/usr/bin', '/bin'].filter(Boolean).join(':'), HOME: work, XDG_CACHE_HOME: cache },
  });
  return { status: run.status, dir: run.stdout.trim(), stderr: run.stderr };
}

describe('scripts/ensure-node.sh', () => {
  const cache = join(work, 'cache');
  const cached = fakeNode(join(cache, 'b2b-sidecar', `node-${PINNED}-linux-${ARCH}`, 'bin'), PINNED);
  const major = Number(PINNED.split('.')[0]);

  it('uses the pinned version from its cache folder when the host has Node 20', () => {
    const host = fakeNode(join(work, 'host20'), '20.20.2');
    const r = ensure(host, cache);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.dir, cached);
  });

  it('uses the cache when the host has a newer major line (the suite runs on the pinned line)', () => {
    const r = ensure(fakeNode(join(work, 'host-next'), `${major + 2}.0.0`), cache);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.dir, cached);
  });

  it("uses the host's node when it is the pinned line, at the pinned version or later", () => {
    const host = fakeNode(join(work, 'host-same'), `${major}.99.0`);
    const r = ensure(host, cache);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.dir, host);
  });

  it('takes another version as its argument and refuses what is not a version', () => {
    const other = fakeNode(join(cache, 'b2b-sidecar', `node-22.23.3-linux-${ARCH}`, 'bin'), '22.23.3');
    assert.equal(ensure(undefined, cache, '22.23.3').dir, other);
    const bad = ensure(undefined, cache, '24.x');
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /not a Node version/);
  });

  it('is what .ci/run puts first on PATH before npm runs, and the other lines get the quick subset and the smoke', () => {
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8');
    const ensureAt = ci.indexOf('PATH="$(scripts/ensure-node.sh):$PATH"');
    assert.ok(ensureAt > 0, '.ci/run puts the pinned node first on PATH');
    assert.ok(ensureAt < ci.indexOf('npm ci'), 'before npm ci');
    assert.match(ci, /OTHER_NODES=\(22\.\d+\.\d+ 26\.\d+\.\d+\)/);
    assert.match(ci, /npm run test:unit && npm run smoke:runtime/);
  });
});
