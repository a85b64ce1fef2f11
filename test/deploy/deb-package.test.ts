import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import * as exitCodes from '../../src/commands/exit-codes.js';
// @ts-expect-error: plain JavaScript build scripts, without type declarations
import { CREDENTIAL_FILES, DEPENDS, DOC_NAMES, packagedConfig } from '../../scripts/release/deb.mjs';
// @ts-expect-error: plain JavaScript build scripts, without type declarations
import { ARCHIVE_UNIT, DEB_UNIT, packagedUnit } from '../../scripts/release/unit.mjs';

/**
 * What the .deb and the archives carry besides the code (scripts/release/deb.mjs, unit.mjs,
 * debian/): the conffile, the units, the man page, the documentation the README links, the
 * Maintainer. Installing and purging the package is scripts/release-smoke.sh's.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const UNIT = read('deploy/systemd/b2b-sidecar.service');
const MAN = read('scripts/release/debian/b2b-sidecar.1');

/** The names in `program.command('<name>')` (as test/docs/commands-in-readme.test.ts reads them). */
function definedCommands(source: string): string[] {
  return [...source.matchAll(/\.command\('([a-z][a-z-]*)'\)/g)].map((m) => m[1]!);
}

/** The man page as text (groff when installed, else the source with its escapes undone). */
function manText(): string {
  const run = spawnSync('groff', ['-man', '-Tutf8', '-P', '-cbou'], { input: MAN, encoding: 'utf8' });
  if (run.status === 0 && run.stdout) return run.stdout;
  return MAN.replace(/\\f[BIRP]/g, '').replace(/\\-/g, '-');
}

/** The lines of a section (`.SH NAME` to the next `.SH`) of the man page's source. */
function manSection(name: string): string {
  const start = MAN.indexOf(`.SH ${name}\n`);
  assert.ok(start >= 0, `the man page has a ${name} section`);
  const end = MAN.indexOf('\n.SH ', start + 1);
  return MAN.slice(start, end < 0 ? undefined : end);
}

describe('the .deb: conffile', () => {
  const conffile = packagedConfig(read('config/sidecar.example.yaml')) as string;
  const config = parse(conffile) as { credentials: Record<string, string> };

  it('names the package\'s own credential files, which postinst creates, and no /run/secrets path', () => {
    assert.equal(config.credentials.apiKeyFile, '/etc/b2b-sidecar/api-key');
    assert.equal(config.credentials.passwordFile, '/etc/b2b-sidecar/password');
    // The container's credential folder; the Kubernetes service-account path of fleet.kubernetesServiceAccountDir is not one.
    assert.doesNotMatch(conffile, /\/run\/secrets\/b2b/);
    assert.deepEqual(CREDENTIAL_FILES, { apiKeyFile: '/etc/b2b-sidecar/api-key', passwordFile: '/etc/b2b-sidecar/password' });
    const postinst = read('scripts/release/debian/postinst');
    assert.match(postinst, /for file in api-key password; do/);
    assert.ok(postinst.includes('install -m 0600 -o root -g root /dev/null "/etc/b2b-sidecar/$file"'));
  });

  it('is otherwise the example config, line for line', () => {
    const example = read('config/sidecar.example.yaml').split('\n');
    const mine = conffile.split('\n');
    assert.equal(mine.length, example.length);
    const changed = example.map((line, i) => [line, mine[i]]).filter(([a, b]) => a !== b);
    assert.ok(changed.every(([a, b]) => a!.replace('/run/secrets/b2b/', '/etc/b2b-sidecar/') === b), JSON.stringify(changed));
  });

  it('fails the build when the example config no longer has the lines it sets', () => {
    assert.throws(() => packagedConfig('credentials:\n  apiKey: x\n'), /credentials\.apiKeyFile/);
  });

  it('is installed 0640 and given the service\'s group b2b-sidecar by postinst, which makes that user and group', () => {
    assert.match(read('scripts/release/deb.mjs'), /chmodSync\(join\(root, 'etc\/b2b-sidecar\/sidecar\.yaml'\), 0o640\)/);
    const postinst = read('scripts/release/debian/postinst');
    assert.match(postinst, /groupadd --system b2b-sidecar/);
    assert.match(postinst, /useradd --system --gid b2b-sidecar/);
    assert.match(postinst, /chgrp b2b-sidecar "\$config"/);
    // The unit's DynamicUser= takes the static user of the unit's name: it must not name another.
    assert.match(UNIT, /^DynamicUser=yes$/m);
    assert.doesNotMatch(UNIT, /^(User|Group)=/m);
  });
});

describe('the .deb: maintainer scripts', () => {
  for (const script of ['postinst', 'prerm', 'postrm']) {
    it(`${script} is valid POSIX sh`, () => {
      execFileSync('sh', ['-n', join(ROOT, 'scripts/release/debian', script)]);
    });
  }

  it('purge removes the credential files, the enable link and the folder if empty, and names what it leaves and why', () => {
    const purge = read('scripts/release/debian/postrm').split('purge)')[1]!;
    assert.match(purge, /rm -f \/etc\/b2b-sidecar\/api-key \/etc\/b2b-sidecar\/password/);
    assert.match(purge, /multi-user\.target\.wants\/b2b-sidecar\.service/);
    assert.match(purge, /rmdir --ignore-fail-on-non-empty \/etc\/b2b-sidecar/);
    assert.match(purge, /did not create/);
    assert.match(purge, /system user and group b2b-sidecar/);
    const install = read('docs/install.md');
    assert.match(install, /apt purge b2b-sidecar/);
    assert.match(install, /did not create/, 'docs/install.md says what purge leaves');
  });

  it('depends on what the scripts and the unit run: useradd (passwd) and /bin/kill (procps)', () => {
    assert.match(UNIT, /^ExecReload=\/bin\/kill /m);
    assert.ok(DEPENDS.split(', ').includes('procps'), DEPENDS);
    assert.ok(DEPENDS.split(', ').includes('passwd'), DEPENDS);
  });
});

describe('the packaged units', () => {
  const deb = packagedUnit(UNIT, DEB_UNIT) as string;
  const archive = packagedUnit(UNIT, ARCHIVE_UNIT) as string;

  it('carry no comment for an npm install, and keep the rest of the repository\'s unit', () => {
    for (const [name, text] of [['deb', deb], ['archive', archive]]) {
      assert.doesNotMatch(text, /npm|node_modules/, name);
      const body = (t: string) => t.slice(t.indexOf('[Unit]')).replace(/^(ExecStart|Documentation)=.*$/gm, '').replaceAll(/\/(usr\/bin|opt\/b2b-sidecar\/bin)\/b2b-sidecar/g, 'B');
      assert.equal(body(text), body(UNIT), name);
    }
  });

  it('start the program each installs and point Documentation= at what each ships', () => {
    assert.match(deb, /^ExecStart=\/usr\/bin\/b2b-sidecar run --config \/etc\/b2b-sidecar\/sidecar\.yaml$/m);
    assert.match(archive, /^ExecStart=\/opt\/b2b-sidecar\/bin\/b2b-sidecar run /m);
    const docs = (text: string) => /^Documentation=(.*)$/m.exec(text)![1]!.split(' ');
    assert.deepEqual(docs(deb).filter((d) => d.startsWith('man:')), [], 'systemd-analyze verify runs man for a man: URI, and fails without man-db');
    for (const uri of docs(deb).filter((d) => d.startsWith('file:'))) {
      const path = uri.slice('file:/usr/share/doc/b2b-sidecar/'.length);
      assert.ok(DOC_NAMES.includes(path.split('/')[0]) && existsSync(join(ROOT, path)), `${uri}: shipped in /usr/share/doc/b2b-sidecar`);
    }
    for (const uri of docs(archive)) {
      const path = uri.slice('file:/opt/b2b-sidecar/'.length);
      assert.ok(existsSync(join(ROOT, path)), `${uri} is in the archive`);
      assert.ok((JSON.parse(read('package.json')) as { files: string[] }).files.some((f) => path.startsWith(f.replace(/\/$/, ''))), `${path} is in the npm package the archive is made from`);
    }
  });

  it('fail the build when the unit no longer has a line they set', () => {
    assert.throws(() => packagedUnit('# x\n[Unit]\nDescription=x\n[Service]\nExecStart=/usr/bin/b2b-sidecar run\n', DEB_UNIT), /Documentation=/);
  });
});

describe('the .deb: documentation', () => {
  it('the man page lists every command the CLI defines, each in COMMANDS', () => {
    const commands = definedCommands(read('src/entry/cli-bundle.ts'));
    assert.ok(commands.includes('status'));
    const section = manSection('COMMANDS');
    const listed = [...section.matchAll(/^\.TP\n\.B (\S+)$/gm)].map((m) => m[1]);
    assert.deepEqual([...listed].sort(), [...commands].sort());
  });

  it('the man page lists every exit code of src/commands/exit-codes.ts in EXIT STATUS', () => {
    const codes = (Object.values(exitCodes) as unknown[]).filter((v): v is number => typeof v === 'number').sort((a, b) => a - b);
    assert.ok(codes.includes(3));
    const listed = [...manSection('EXIT STATUS').matchAll(/^\.TP\n\.B (\d+)$/gm)].map((m) => Number(m[1]));
    assert.deepEqual(listed, codes);
  });

  it('the man page renders (groff) and names the config\'s mode and group', () => {
    const text = manText();
    assert.match(text, /0640/);
    assert.match(text, /b2b-sidecar \(the\s+service's group\)|group b2b-sidecar/);
  });

  it('ships, in /usr/share/doc/b2b-sidecar, everything under docs/, deploy/, config/ and bench/ the README links', () => {
    const readme = read('README.md');
    const links = [...readme.matchAll(/\]\(([^)#:]+)/g)].map((m) => m[1]!).filter((l) => !l.startsWith('http'));
    const prefixes = new Set(links.map((l) => l.split('/')[0]!));
    for (const dir of ['docs', 'deploy', 'config']) assert.ok(prefixes.has(dir) && DOC_NAMES.includes(dir), dir);
    assert.ok(links.some((l) => l.startsWith('deploy/prometheus/')) && links.some((l) => l.startsWith('deploy/grafana/')), 'the README links the alerts and the dashboard');
    for (const link of links.filter((l) => DOC_NAMES.includes(l.split('/')[0]!))) assert.ok(existsSync(join(ROOT, link)), link);
  });
});

describe('the release: Maintainer', () => {
  it('is package.json\'s author, "Name <address>", and written nowhere else', () => {
    const pkg = JSON.parse(read('package.json')) as { author?: string };
    assert.match(pkg.author ?? '', /^[^<>]+ <[^<>@\s]+@[^<>\s]+>$/);
    const release = read('scripts/release.mjs');
    assert.match(release, /pkg\.author/);
    assert.doesNotMatch(release, /example\.org|RELEASE_MAINTAINER/);
    assert.doesNotMatch(read('scripts/release/deb.mjs'), /@example|maintainers </);
  });
});
