import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: plain JavaScript build scripts, without type declarations
import { writeZip } from '../../scripts/release/zip.mjs';
// @ts-expect-error: plain JavaScript build scripts, without type declarations
import { bundledPackages, cycloneDx, installedPackages } from '../../scripts/release/sbom.mjs';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'b2b-release-test-'));
after(() => rmSync(work, { recursive: true, force: true }));

describe('the release scripts (scripts/release.mjs and scripts/release/)', () => {
  it('writes a zip that Python\'s zipfile reads back: names, bytes, Unix modes, the UTC time; the same bytes twice', () => {
    const big = Buffer.from('b2b-sidecar '.repeat(5000));
    writeFileSync(join(work, 'big.txt'), big);
    const entries = [
      { name: 'top/', mode: 0o755 },
      { name: 'top/b2b-sidecar.cmd', mode: 0o644, data: Buffer.from('@echo off\r\n') },
      { name: 'top/bin/', mode: 0o755 },
      { name: 'top/bin/run', mode: 0o755, data: Buffer.from('#!/bin/sh\n') },
      { name: 'top/big.txt', mode: 0o644, file: join(work, 'big.txt') },
      { name: 'top/empty', mode: 0o644, data: Buffer.alloc(0) },
    ];
    const epoch = Date.UTC(2026, 10, 27, 7, 22, 8) / 1000; // an odd second: DOS times count in 2 s steps
    writeZip(join(work, 'a.zip'), entries, epoch);
    writeZip(join(work, 'b.zip'), entries, epoch);
    assert.deepEqual(readFileSync(join(work, 'a.zip')), readFileSync(join(work, 'b.zip')));

    const listing = execFileSync('python3', ['-c', `
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    assert z.testzip() is None
    print(json.dumps([[i.filename, oct(i.external_attr >> 16), list(i.date_time), i.compress_type, z.read(i).decode()[:20], i.file_size] for i in z.infolist()]))
`, join(work, 'a.zip')], { encoding: 'utf8' });
    const rows = JSON.parse(listing) as [string, string, number[], number, string, number][];
    assert.deepEqual(rows.map((r) => [r[0], r[1]]), [
      ['top/', '0o40755'], ['top/b2b-sidecar.cmd', '0o100644'], ['top/bin/', '0o40755'], ['top/bin/run', '0o100755'],
      ['top/big.txt', '0o100644'], ['top/empty', '0o100644'],
    ]);
    for (const row of rows) assert.deepEqual(row[2], [2026, 11, 27, 7, 22, 8]);
    const bigRow = rows.find((r) => r[0] === 'top/big.txt')!;
    assert.equal(bigRow[3], 8, 'deflated');
    assert.equal(bigRow[5], big.length);
    assert.equal(rows.find((r) => r[0] === 'top/b2b-sidecar.cmd')![4], '@echo off\r\n');
  });

  it('bin/b2b-sidecar runs the node/ beside it with dist/cli.js, from anywhere and through a symlink', () => {
    const tree = join(work, 'opt/b2b-sidecar-9.9.9');
    mkdirSync(join(tree, 'bin'), { recursive: true });
    mkdirSync(join(tree, 'node/bin'), { recursive: true });
    writeFileSync(join(tree, 'bin/b2b-sidecar'), readFileSync(join(ROOT, 'scripts/release/launcher.sh')));
    // A stand-in for the runtime that shows how it was called.
    writeFileSync(join(tree, 'node/bin/node'), '#!/bin/sh\nprintf "%s|" "$0" "$@"\n');
    chmodSync(join(tree, 'bin/b2b-sidecar'), 0o755);
    chmodSync(join(tree, 'node/bin/node'), 0o755);
    mkdirSync(join(work, 'usr/bin'), { recursive: true });
    symlinkSync(join(tree, 'bin/b2b-sidecar'), join(work, 'usr/bin/b2b-sidecar'));
    // --disable-sigusr1: no signal opens the inspector (docs/traps.md T65).
    const expected = `${tree}/node/bin/node|--disable-sigusr1|${tree}/dist/cli.js|run|--config|/etc/b2b-sidecar/sidecar.yaml|a b|`;
    for (const command of [join(tree, 'bin/b2b-sidecar'), join(work, 'usr/bin/b2b-sidecar')]) {
      const out = execFileSync(command, ['run', '--config', '/etc/b2b-sidecar/sidecar.yaml', 'a b'], { cwd: '/', encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } });
      assert.equal(out, expected, command);
    }
  });

  it('finds every package a tree ships: installed (nested too) and compiled into the bundles (their source maps)', () => {
    const build = join(work, 'build');
    const tree = join(work, 'tree');
    const manifest = (dir: string, name: string, version: string, license = 'MIT') => {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version, license }));
    };
    // The build tree: debug only here (an optional peer a production install leaves out), under follow-redirects.
    manifest(join(build, 'node_modules/follow-redirects'), 'follow-redirects', '1.15.0');
    manifest(join(build, 'node_modules/follow-redirects/node_modules/debug'), 'debug', '4.3.4');
    manifest(join(build, 'node_modules/@peculiar/x509'), '@peculiar/x509', '2.2.0');
    // The shipped tree: a production node_modules and a bundle whose map names both build-tree packages.
    manifest(join(tree, 'node_modules/follow-redirects'), 'follow-redirects', '1.15.0');
    manifest(join(tree, 'node_modules/ajv'), 'ajv', '8.20.0');
    manifest(join(tree, 'node_modules/ajv/node_modules/fast-uri'), 'fast-uri', '3.0.0', 'BSD-3-Clause');
    mkdirSync(join(tree, 'dist/lib/bundle'), { recursive: true });
    writeFileSync(join(tree, 'dist/lib/bundle/run.cjs.map'), JSON.stringify({ sources: [
      '../../../src/sidecar.ts',
      '../../../node_modules/follow-redirects/node_modules/debug/src/index.js',
      '../../../node_modules/@peculiar/x509/build/x509.es.js',
    ] }));

    const installed = installedPackages(tree) as Map<string, { where: string[] }>;
    assert.deepEqual([...installed.keys()].sort(), ['ajv@8.20.0', 'fast-uri@3.0.0', 'follow-redirects@1.15.0']);
    assert.deepEqual(installed.get('fast-uri@3.0.0')!.where, ['node_modules/ajv/node_modules/fast-uri']);

    const bundled = bundledPackages(tree, build) as Map<string, { where: string[] }>;
    assert.deepEqual([...bundled.keys()].sort(), ['@peculiar/x509@2.2.0', 'debug@4.3.4']);
    assert.deepEqual(bundled.get('debug@4.3.4')!.where, ['bundled in dist/lib/bundle/run.cjs']);
    // Without the build tree (an unpacked archive) the names are still known.
    assert.deepEqual([...(bundledPackages(tree) as Map<string, { name: string }>).values()].map((p) => p.name).sort(), ['@peculiar/x509', 'debug']);

    const sbom = cycloneDx({
      app: { name: 'b2b-sidecar', version: '9.9.9', license: 'MIT' },
      packages: new Map([...installed, ...bundled]),
      runtimes: [{ name: 'node-linux-x64', version: '24.0.0', license: 'MIT', path: 'node/bin/node', sha256: 'ab'.repeat(32), archives: ['x.tar.gz'] }],
      epoch: 1795764127,
    });
    const x509 = sbom.components.find((c: { name: string }) => c.name === 'x509');
    assert.equal(x509.purl, 'pkg:npm/%40peculiar/x509@2.2.0');
    assert.equal(x509.group, '@peculiar');
    assert.deepEqual(sbom.components.find((c: { name: string }) => c.name === 'fast-uri').licenses, [{ license: { id: 'BSD-3-Clause' } }]);
    assert.equal(sbom.components.length, 6);
    assert.match(sbom.serialNumber, /^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(sbom.metadata.timestamp, '2026-11-27T07:22:07Z');
  });

  it('the npm package ships every file the README links to (npm pack --dry-run)', () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const links = [...readme.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)].map((m) => m[1]!).filter((link) => !/^[a-z]+:/.test(link));
    assert.ok(links.length > 10, `found only ${links.length} relative links`);
    const [packed] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })) as [{ files: { path: string }[] }];
    const files = packed.files.map((f) => f.path);
    for (const link of new Set(links)) {
      const path = link.replace(/\/$/, '');
      assert.ok(files.includes(path) || files.some((f) => f.startsWith(`${path}/`)), `README links to ${link}, which the npm package does not ship`);
    }
    assert.ok(!files.some((f) => f.startsWith('docs/drafts/')), 'docs/drafts/ is not for the package');
  });

  // docs/traps.md T57. Needs `npm run build` (dist/); works on a copy, since other tests run dist/.
  it('makes the release code cache reproducibly: warm starts with --predictable --random-seed=1 agree, without them none do, and a node without the flags takes it', async () => {
    assert.ok(existsSync(join(ROOT, 'dist/lib/bundle/run.cjs')), 'dist/ is missing: npm run build first');
    const copy = join(work, 'cache-build');
    cpSync(join(ROOT, 'dist'), join(copy, 'dist'), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules')); // what dist/lib/ imports
    const { makeReproducibleCodeCache, CodeCacheNotReproducible } = await import(join(ROOT, 'scripts/release/code-cache.mjs'));
    // A loaded machine (this suite runs two files at once) may take longer than the build's 20 s to the first token.
    const env = { ...process.env, WARM_CODE_CACHE_TIMEOUT_MS: '120000' };
    const dist = join(copy, 'dist');
    // Without the flags V8's random hash seeds and helper threads make every warm start differ.
    assert.throws(() => makeReproducibleCodeCache({ node: process.execPath, dist, env, flags: [], attempts: 3 }), CodeCacheNotReproducible);
    const made = makeReproducibleCodeCache({ node: process.execPath, dist, env });
    assert.equal(made.agreed.length, 2);
    assert.ok(readFileSync(join(dist, 'lib/bundle/run.cjs.v8cache')).equals(made.bytes), 'the agreed cache is the one left in dist/');
    const used = execFileSync(process.execPath, ['--input-type=module', '-e',
      `const { loadCommonJs } = await import(${JSON.stringify(join(copy, 'dist/lib/entry/code-cache.js'))});
       process.stdout.write(String(loadCommonJs(${JSON.stringify(join(copy, 'dist/lib/bundle/run.cjs'))}).cacheUsed));`], { encoding: 'utf8' });
    assert.equal(used, 'true', 'V8 rejected the cache made with --predictable --random-seed=1');
  });
});
