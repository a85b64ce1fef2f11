import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { win32 } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parseDocument } from 'yaml';

/**
 * The Windows install on paper (no Windows machine runs it here): docs/install.md's PowerShell and
 * YAML, and deploy/windows/b2b-sidecar-service.xml, which WinSW reads with .NET's XML parser.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');
const INSTALL = read('docs/install.md');
const WINDOWS = INSTALL.slice(INSTALL.indexOf('## Windows: the zip'), INSTALL.indexOf('\n## ', INSTALL.indexOf('## Windows: the zip') + 1));
const XML = read('deploy/windows/b2b-sidecar-service.xml');
const FOLDER = 'C:\\ProgramData\\b2b-sidecar';

function blocks(text: string, lang: string): string[] {
  return [...text.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]!);
}

/** The service XML through a real XML parser (Python's expat): its well-formedness, executable, arguments and env. */
function parseService(xml: string): { executable: string; arguments: string; env: Record<string, string> } {
  const out = execFileSync('python3', ['-c', `
import json, sys, xml.etree.ElementTree as E
root = E.fromstring(sys.stdin.read())
print(json.dumps({"executable": root.findtext("executable"), "arguments": root.findtext("arguments"),
  "env": {e.get("name"): e.get("value") for e in root.findall("env")}}))
`], { input: xml, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  return JSON.parse(out) as { executable: string; arguments: string; env: Record<string, string> };
}

/** Windows paths among a YAML document's string values. */
function windowsPaths(value: unknown): string[] {
  if (typeof value === 'string') return /^[A-Za-z]:[\\/]/.test(value) || /[\u0000-\u001f\u2028\u2029]/.test(value) ? [value] : [];
  if (value && typeof value === 'object') return Object.values(value).flatMap(windowsPaths);
  return [];
}

describe('deploy/windows/b2b-sidecar-service.xml', () => {
  const service = parseService(XML);

  it('is well-formed XML (no "--" inside a comment, which .NET refuses)', () => {
    assert.equal(service.executable, '%BASE%\\node\\node.exe');
    assert.throws(() => parseService('<!-- doctor --config x --><service/>'), 'the parser refuses what WinSW would');
  });

  it('passes the Linux unit\'s NODE_OPTIONS to the service', () => {
    const unit = read('deploy/systemd/b2b-sidecar.service');
    const linux = /^Environment="?NODE_OPTIONS=([^"\n]*)"?$/m.exec(unit)?.[1];
    assert.ok(linux, 'the unit sets NODE_OPTIONS');
    assert.equal(service.env.NODE_OPTIONS, linux.replace(/^"|"$/g, ''));
    assert.equal(service.env.NODE_ENV, 'production');
  });

  it('gives node.exe the options b2b-sidecar.cmd gives it before dist\\cli.js, and quotes both paths', () => {
    const launcher = /"%~dp0node\\node\.exe"(.*?)"%~dp0dist\\cli\.js"/.exec(read('scripts/release/launcher.cmd'));
    assert.ok(launcher, 'b2b-sidecar.cmd runs node\\node.exe with dist\\cli.js');
    const args = /^(.*?)"%BASE%\\dist\\cli\.js" run --config "([^"]+)"$/.exec(service.arguments);
    assert.ok(args, service.arguments);
    assert.equal(args[1]!.trim(), launcher[1]!.trim());
    assert.equal(args[2], `${FOLDER}\\sidecar.yaml`);
  });
});

describe('docs/install.md: Windows', () => {
  it('has YAML examples whose Windows paths survive YAML: single quotes or forward slashes, never double quotes', () => {
    const yamls = blocks(WINDOWS, 'yaml');
    assert.ok(yamls.length > 0, 'a YAML example for Windows paths');
    let paths = 0;
    for (const block of yamls) {
      const doc = parseDocument(block);
      assert.deepEqual(doc.errors.map((e) => e.message), []);
      for (const path of windowsPaths(doc.toJS())) {
        paths++;
        assert.doesNotMatch(path, /[\u0000-\u001f\u2028\u2029]/, `${JSON.stringify(path)}: an escape ate a backslash`);
        assert.ok(win32.isAbsolute(path) && win32.normalize(path).startsWith(`${FOLDER}\\`), path);
      }
      assert.doesNotMatch(block, /"[A-Za-z]:\\/, 'no double-quoted Windows path');
    }
    assert.ok(paths >= 2);
    // What the rule prevents: the same path in double quotes is another string (\b backspace, \P U+2029).
    const broken = parseDocument(`f: "${FOLDER}\\api-key"`).toJS() as { f: string };
    assert.notEqual(broken.f, `${FOLDER}\\api-key`);
    assert.match(WINDOWS, /\\b`, `\\P`/, 'the text says why');
  });

  it('takes the config folder over whoever made it: owner Administrators, inheritance cut, SYSTEM and Administrators only (by SID)', () => {
    const ps = blocks(WINDOWS, 'powershell').join('\n');
    const lines = ps.split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    const icacls = lines.filter((l) => l.startsWith('icacls '));
    assert.ok(lines.includes(`$dir = '${FOLDER}'`));
    const i = (pattern: RegExp) => icacls.findIndex((l) => pattern.test(l));
    const setowner = i(/^icacls \$dir \/setowner '\*S-1-5-32-544' \/T \/C \/L \/Q$/);
    const reset = i(/^icacls \$dir \/reset \/T \/C \/L \/Q$/);
    const lock = i(/^icacls \$dir \/inheritance:r \/grant:r '\*S-1-5-18:\(OI\)\(CI\)F' '\*S-1-5-32-544:\(OI\)\(CI\)F' \/L \/Q$/);
    assert.ok(setowner === 0 && reset === 1 && lock === 2, icacls.join('\n'));
    // What was made in the folder between the reset and the lock is owned and reset again.
    assert.ok(icacls.slice(3).some((l) => /^icacls \$dir \/setowner '\*S-1-5-32-544' \/T/.test(l)));
    assert.ok(icacls.slice(3).some((l) => /^icacls "\$dir\\\*" \/reset \/T/.test(l)));
    assert.ok(lines.some((l) => l.includes('.LinkType')), 'a link in its place is refused');
  });

  it('quotes for PowerShell: paths and icacls grants in quotes (PowerShell reads (OI) as an expression)', () => {
    for (const block of blocks(WINDOWS, 'powershell')) {
      for (const line of block.split('\n')) {
        const code = line.replace(/#.*$/, '');
        const bare = code.replace(/'[^']*'/g, "''").replace(/"[^"]*"/g, '""');
        assert.doesNotMatch(bare, /[A-Za-z]:\\/, `an unquoted path: ${line}`);
        assert.doesNotMatch(bare, /\((OI|CI)\)/, `an unquoted grant: ${line}`);
      }
    }
  });

  it('documents the manual check for files others own or can write, by SID', () => {
    const check = blocks(WINDOWS, 'powershell').find((b) => b.includes('Get-Acl'));
    assert.ok(check, 'the check');
    assert.match(check, /\$trusted = 'S-1-5-18', 'S-1-5-32-544'/);
    assert.match(check, /GetOwner\(\$sid\)/);
    assert.match(check, /GetAccessRules\(\$true, \$true, \$sid\)/);
    for (const right of ['WriteData', 'AppendData', 'ChangePermissions', 'TakeOwnership', 'Delete']) assert.ok(check.includes(right), right);
    assert.match(XML, /docs\\install\.md, "Windows: the zip"/, 'the XML points there');
  });
});
