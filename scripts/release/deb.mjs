// The Debian package, built with dpkg-deb alone from a staged release tree:
//   /usr/lib/b2b-sidecar/        the tree of the Linux archive (runtime, bundle, production deps)
//   /usr/bin/b2b-sidecar         a symlink to its launcher
//   /usr/lib/systemd/system/     the unit, ExecStart=/usr/bin/b2b-sidecar as in the repository
//   /etc/b2b-sidecar/sidecar.yaml  the example config naming the package's credential files, a
//                                  conffile (kept by dpkg -r, gone with -P), 0640 root:b2b-sidecar
//   /usr/share/doc/b2b-sidecar/  README, docs, deploy (alerts, dashboard ...), config, changelog,
//                                copyright (with the third-party licences): where the README links
// The maintainer scripts (scripts/release/debian/) make the system user and group b2b-sidecar (the
// unit's DynamicUser= takes it, so the service's group can read sidecar.yaml), create the empty
// root-only credential files, and never enable or start the service.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { DEB_UNIT, packagedUnit } from './unit.mjs';

const HERE = new URL('./debian/', import.meta.url).pathname;

/**
 * What the official Node.js binary needs (readelf -d: libc, libstdc++, libgcc_s; objdump -T: at
 * most GLIBC_2.28, GLIBCXX_3.4.21, CXXABI_1.3.11, GCC_3.4 for 24.x). Every minimal Debian has them
 * (apt itself needs libstdc++6); releaseChecks() in scripts/release.mjs fails the build when a new
 * runtime asks for a newer glibc.
 */
export const DEPENDS = 'libc6 (>= 2.28), libgcc-s1 (>= 3.4), libstdc++6 (>= 5.2), passwd, procps';
// passwd: useradd and groupadd in postinst. procps: /bin/kill, which the unit's ExecReload= runs (the
// unit is the same in every artifact, and /bin/kill is what Debian's own units use); both are in
// every Debian install, minbase included for passwd, and every standard one for procps.

/**
 * What moves from the tree to /usr/share/doc/b2b-sidecar, so the README's relative links resolve
 * there: deploy/ and config/ too (its alerts, dashboard, manifests and example config).
 */
export const DOC_NAMES = ['README.md', 'docs', 'bench', 'deploy', 'config'];

/** The credential files the conffile names: the package's own, made by postinst (not a container's /run/secrets). */
export const CREDENTIAL_FILES = { apiKeyFile: '/etc/b2b-sidecar/api-key', passwordFile: '/etc/b2b-sidecar/password' };

/** config/sidecar.example.yaml as the .deb's conffile: its credential files are the package's. */
export function packagedConfig(text) {
  for (const [key, path] of Object.entries(CREDENTIAL_FILES)) {
    const line = new RegExp(`^(  ${key}: )\\S+$`, 'm');
    if (!line.test(text)) throw new Error(`config/sidecar.example.yaml has no credentials.${key} line`);
    text = text.replace(line, `$1${path}`);
  }
  // The commented examples too (localization.tokenFile): every file of the package's in /etc/b2b-sidecar.
  return text.replaceAll('/run/secrets/b2b/', '/etc/b2b-sidecar/');
}
export const GLIBC_FLOOR = '2.28';

export function buildDeb({ tree, arch, version, epoch, maintainer, out, work }) {
  const root = join(work, `deb-${arch}`);
  const lib = join(root, 'usr/lib/b2b-sidecar');
  const doc = join(root, 'usr/share/doc/b2b-sidecar');
  mkdirSync(join(root, 'DEBIAN'), { recursive: true });
  mkdirSync(join(root, 'usr/bin'), { recursive: true });
  mkdirSync(join(root, 'usr/lib/systemd/system'), { recursive: true });
  mkdirSync(join(root, 'etc/b2b-sidecar'), { recursive: true });
  mkdirSync(join(root, 'usr/share/man/man1'), { recursive: true });
  mkdirSync(join(root, 'usr/share/lintian/overrides'), { recursive: true });
  renameSync(tree, lib); // the caller's own copy of the Linux tree

  // Documentation belongs under /usr/share/doc (Debian policy 12.3); the tree's copies move there.
  mkdirSync(doc, { recursive: true });
  for (const name of DOC_NAMES) renameSync(join(lib, name), join(doc, name));
  // changelog.gz is the Debian changelog of this native package (one entry); the project's own is CHANGELOG.md.gz.
  writeFileSync(join(doc, 'CHANGELOG.md.gz'), gzipSync(readFileSync(join(lib, 'CHANGELOG.md')), { level: 9 }));
  writeFileSync(join(doc, 'changelog.gz'), gzipSync(debianChangelog({ version, maintainer, epoch }), { level: 9 }));
  writeFileSync(join(doc, 'copyright'), copyright(readFileSync(join(lib, 'LICENSE'), 'utf8')));
  // Kept under /usr/lib: the launcher reads package.json for the version; LICENSE, the
  // third-party file and node/LICENSE sit beside what they cover, as in the archive. The example
  // config is /etc/b2b-sidecar/sidecar.yaml, the unit is in systemd's directory.
  const unit = packagedUnit(readFileSync(join(doc, 'deploy/systemd/b2b-sidecar.service'), 'utf8'), DEB_UNIT);
  writeFileSync(join(root, 'usr/lib/systemd/system/b2b-sidecar.service'), unit);
  writeFileSync(join(root, 'etc/b2b-sidecar/sidecar.yaml'), packagedConfig(readFileSync(join(doc, 'config/sidecar.example.yaml'), 'utf8')));
  execFileSync('rm', ['-f', join(lib, 'CHANGELOG.md')]);

  symlinkSync('../lib/b2b-sidecar/bin/b2b-sidecar', join(root, 'usr/bin/b2b-sidecar'));
  writeFileSync(join(root, 'usr/share/man/man1/b2b-sidecar.1.gz'), gzipSync(readFileSync(join(HERE, 'b2b-sidecar.1')), { level: 9 }));
  cpSync(join(HERE, 'lintian-overrides'), join(root, 'usr/share/lintian/overrides/b2b-sidecar'));

  for (const script of ['postinst', 'prerm', 'postrm']) cpSync(join(HERE, script), join(root, 'DEBIAN', script));
  writeFileSync(join(root, 'DEBIAN/conffiles'), '/etc/b2b-sidecar/sidecar.yaml\n');

  normalize(root);
  chmodSync(join(root, 'etc/b2b-sidecar'), 0o755);
  // Not readable by others from the moment dpkg unpacks it; postinst gives it the group b2b-sidecar.
  chmodSync(join(root, 'etc/b2b-sidecar/sidecar.yaml'), 0o640);
  const files = walk(root).filter((path) => !path.startsWith('DEBIAN/') && lstatSync(join(root, path)).isFile());
  writeFileSync(join(root, 'DEBIAN/md5sums'), files.map((path) => `${createHash('md5').update(readFileSync(join(root, path))).digest('hex')}  ${path}\n`).join(''));
  const installedKiB = Number(execFileSync('du', ['-s', '-k', '--apparent-size', '--exclude=DEBIAN', root], { encoding: 'utf8' }).split('\t')[0]);
  writeFileSync(join(root, 'DEBIAN/control'), [
    'Package: b2b-sidecar',
    `Version: ${version}`,
    `Architecture: ${arch}`,
    `Maintainer: ${maintainer}`,
    `Installed-Size: ${installedKiB}`,
    `Depends: ${DEPENDS}`,
    'Section: net',
    'Priority: optional',
    'Description: token-refreshing sidecar proxy for a B2B authorization API',
    ' Holds the ApiKey and password of a back-to-back (server-to-server)',
    ' authorization API, obtains a short-lived token, renews it well inside its',
    ' lifetime, and reverse-proxies plain-HTTP requests from local applications',
    ' to the HTTPS service with the token attached.',
    ' .',
    ' Ships its own Node.js runtime under /usr/lib/b2b-sidecar. The systemd unit',
    ' is installed but neither enabled nor started: fill in',
    ' /etc/b2b-sidecar/sidecar.yaml, api-key and password first. Prometheus',
    ' alerts and a Grafana dashboard are in /usr/share/doc/b2b-sidecar/deploy.',
    '',
  ].join('\n'));
  for (const path of ['DEBIAN/control', 'DEBIAN/conffiles', 'DEBIAN/md5sums']) chmodSync(join(root, path), 0o644);
  execFileSync('find', [root, '-exec', 'touch', '-h', '-d', `@${epoch}`, '{}', '+']);

  // gzip rather than xz: the runtime makes the data 180 MB, which xz takes about a minute to squeeze
  // on one core for 15 MB less; every dpkg and apt reads both.
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z6', '--build', root, out], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) },
  });
}

function walk(root) {
  return readdirSync(root, { recursive: true }).map(String).sort();
}

/** Directories 0755, files 0644, or 0755 when anyone may execute them: what dpkg installs. */
function normalize(root) {
  for (const path of walk(root)) {
    const full = join(root, path);
    const stat = lstatSync(full);
    if (stat.isSymbolicLink()) continue;
    chmodSync(full, stat.isDirectory() || (stat.mode & 0o111) !== 0 ? 0o755 : 0o644);
  }
}

/** DEP-5 copyright: the project's MIT licence; the runtime's and the npm packages' stay in their files beside them. */
function copyright(license) {
  const indent = (text) => text.trim().split('\n').map((line) => (line.trim() === '' ? ' .' : ` ${line}`)).join('\n');
  const holder = license.match(/^Copyright (?:\(c\) )?(.*)$/m)?.[1] ?? 'b2b-sidecar contributors';
  return [
    'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/',
    'Upstream-Name: b2b-sidecar',
    '',
    'Files: *',
    `Copyright: ${holder}`,
    'License: MIT',
    '',
    'Files: usr/lib/b2b-sidecar/node/*',
    'Copyright: Node.js contributors and the authors of the libraries it contains',
    'License: Node.js',
    ' The licence of Node.js and of every library it contains is',
    ' /usr/lib/b2b-sidecar/node/LICENSE.',
    '',
    'Files: usr/lib/b2b-sidecar/node_modules/* usr/lib/b2b-sidecar/dist/lib/bundle/*',
    'Copyright: the authors of each npm package',
    'License: npm-packages',
    ' Each npm package in node_modules/, or compiled into the bundles in',
    ' dist/lib/bundle/, is listed with its licence text in',
    ' /usr/lib/b2b-sidecar/THIRD-PARTY-LICENSES.txt (and in the licence file',
    ' beside its code).',
    '',
    'License: MIT',
    indent(license),
    '',
  ].join('\n');
}

/** A Debian changelog with the one entry of this version (a native package's changelog.gz). */
function debianChangelog({ version, maintainer, epoch }) {
  const date = new Date(epoch * 1000).toUTCString().replace(/GMT$/, '+0000').replace(/^(\w+), 0?(\d+)/, '$1, $2');
  return [
    `b2b-sidecar (${version}) unstable; urgency=medium`,
    '',
    `  * b2b-sidecar ${version}; its changes are in CHANGELOG.md.gz.`,
    '',
    ` -- ${maintainer}  ${date}`,
    '',
  ].join('\n');
}
