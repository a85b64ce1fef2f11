// Checks a release directory (npm run release) against what its archives really contain:
//   - exactly the artifacts the README names, and SHA256SUMS covers each of them with its hash;
//   - each archive unpacked by its own tool (tar, dpkg-deb, Python's zipfile: not this project's
//     zip writer) has the one top folder b2b-sidecar-<v>/ (the .deb: /usr/lib/b2b-sidecar/);
//   - every package installed in an archive's node_modules/ or compiled into its bundles (source
//     maps) is in the SBOM with that name and version, and every npm package the SBOM lists is in
//     every full archive; the runtime binary's SHA-256 is the SBOM's for that archive.
// Usage: node scripts/release/check-release.mjs [release-dir]
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { bundledPackages, installedPackages, npmPurl } from './sbom.mjs';

const dir = resolve(process.argv[2] ?? 'release');
const problems = [];
const fail = (message) => problems.push(message);
const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

const sbomName = readdirSync(dir).find((name) => name.endsWith('.cdx.json'));
if (!sbomName) throw new Error(`${dir} has no *.cdx.json`);
const sbom = JSON.parse(readFileSync(join(dir, sbomName), 'utf8'));
const v = sbom.metadata.component.version;
const expected = [`b2b-sidecar-${v}.tgz`, `b2b-sidecar-${v}-linux-x64.tar.gz`, `b2b-sidecar-${v}-linux-arm64.tar.gz`, `b2b-sidecar-${v}-win-x64.zip`,
  `b2b-sidecar_${v}_amd64.deb`, `b2b-sidecar_${v}_arm64.deb`, `b2b-sidecar-${v}.cdx.json`];
const present = readdirSync(dir).sort();
if (JSON.stringify(present) !== JSON.stringify([...expected, 'SHA256SUMS'].sort())) fail(`artifacts: ${present.join(' ')}; expected ${[...expected, 'SHA256SUMS'].sort().join(' ')}`);

const sums = new Map(readFileSync(join(dir, 'SHA256SUMS'), 'utf8').trim().split('\n').map((line) => line.split(/ [ *]/).reverse()));
for (const name of expected) {
  if (!sums.has(name)) fail(`SHA256SUMS has no line for ${name}`);
  else if (existsSync(join(dir, name)) && sums.get(name) !== sha256(join(dir, name))) fail(`SHA256SUMS: ${name} does not match`);
}

const npmComponents = sbom.components.filter((c) => c.purl.startsWith('pkg:npm/') && c.type === 'library');
const purls = new Set(npmComponents.map((c) => c.purl));
const fullName = (c) => (c.group ? `${c.group}/${c.name}` : c.name);
const names = new Set(npmComponents.map(fullName));
for (const c of npmComponents) if (!c.licenses?.length) fail(`SBOM: ${c.purl} has no licence`);
const runtimes = sbom.components.filter((c) => c.type === 'platform');

const work = mkdtempSync(join(tmpdir(), 'b2b-release-check-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));
const unpack = (name) => {
  const into = join(work, name);
  mkdirSync(into);
  const file = join(dir, name);
  if (name.endsWith('.deb')) execFileSync('dpkg-deb', ['-x', file, into]);
  else if (name.endsWith('.zip')) execFileSync('python3', ['-m', 'zipfile', '-e', file, into]);
  else execFileSync('tar', ['-xzf', file, '-C', into]);
  return into;
};

const archives = [
  { name: `b2b-sidecar-${v}.tgz`, top: 'package', full: false },
  { name: `b2b-sidecar-${v}-linux-x64.tar.gz`, top: `b2b-sidecar-${v}`, runtime: 'node/bin/node', full: true },
  { name: `b2b-sidecar-${v}-linux-arm64.tar.gz`, top: `b2b-sidecar-${v}`, runtime: 'node/bin/node', full: true },
  { name: `b2b-sidecar-${v}-win-x64.zip`, top: `b2b-sidecar-${v}`, runtime: 'node/node.exe', full: true },
  { name: `b2b-sidecar_${v}_amd64.deb`, top: 'usr', root: 'usr/lib/b2b-sidecar', runtime: 'node/bin/node', full: true },
  { name: `b2b-sidecar_${v}_arm64.deb`, top: 'usr', root: 'usr/lib/b2b-sidecar', runtime: 'node/bin/node', full: true },
];
for (const archive of archives) {
  const unpacked = unpack(archive.name);
  const tops = readdirSync(unpacked).sort();
  const wantedTops = archive.name.endsWith('.deb') ? ['etc', 'usr'] : [archive.top];
  if (JSON.stringify(tops) !== JSON.stringify(wantedTops)) fail(`${archive.name}: top level is ${tops.join(' ')}, expected ${wantedTops.join(' ')}`);
  const root = join(unpacked, archive.root ?? archive.top);
  const installed = installedPackages(root);
  const bundled = bundledPackages(root);
  for (const [key, p] of installed) if (!purls.has(npmPurl(p.name, p.version))) fail(`${archive.name}: ships ${key} (${p.where[0]}), which the SBOM does not list`);
  for (const p of bundled.values()) if (!names.has(p.name)) fail(`${archive.name}: its bundles contain ${p.name} (${p.where[0]}), which the SBOM does not list`);
  if (archive.full) {
    const bundledNames = new Set([...bundled.values()].map((p) => p.name));
    for (const c of npmComponents) {
      const inModules = [...installed.values()].some((p) => npmPurl(p.name, p.version) === c.purl);
      const inBundles = bundledNames.has(fullName(c)) && c.properties.some((p) => p.value.startsWith('bundled in'));
      if (!inModules && !inBundles) fail(`${archive.name}: the SBOM lists ${c.purl}, which is not in it`);
    }
    const runtime = runtimes.filter((r) => r.properties.some((p) => p.value === archive.name));
    if (runtime.length !== 1) fail(`${archive.name}: the SBOM names ${runtime.length} runtimes for it`);
    else if (!existsSync(join(root, archive.runtime))) fail(`${archive.name}: no ${archive.runtime}`);
    else if (sha256(join(root, archive.runtime)) !== runtime[0].hashes[0].content) fail(`${archive.name}: ${archive.runtime} is not the SBOM's ${runtime[0].purl}`);
  }
  process.stdout.write(`${archive.name}: ${installed.size} packages in node_modules, ${bundled.size} compiled into the bundles\n`);
}

if (problems.length > 0) {
  process.stderr.write(`check-release: FAIL\n${problems.map((p) => `  - ${p}`).join('\n')}\n`);
  process.exitCode = 1;
} else {
  process.stdout.write(`check-release: OK: ${expected.length} artifacts, SHA256SUMS, the SBOM's ${npmComponents.length} npm packages and ${runtimes.length} runtimes match the archives\n`);
}
