import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import * as codes from '../../src/commands/exit-codes.js';

const root = new URL('../../', import.meta.url);

describe('one exit-code table', () => {
  it('the README table lists exactly the codes of exit-codes.ts', () => {
    const readme = readFileSync(new URL('README.md', root), 'utf8');
    const row = /^\| exit code \(every command\) \|(.*)\|$/m.exec(readme);
    assert.ok(row, 'the README has the exit-code table');
    const inReadme = row[1]!.split('|').map((c) => Number(c.trim()));
    assert.deepEqual(inReadme, Object.values(codes).sort((a, b) => a - b));
    assert.deepEqual({ ok: codes.EXIT_OK, failure: codes.EXIT_FAILURE, usage: codes.EXIT_USAGE, unreachable: codes.EXIT_UNREACHABLE, interrupted: codes.EXIT_INTERRUPTED },
      { ok: 0, failure: 1, usage: 2, unreachable: 3, interrupted: 130 }, 'the codes scripts and docs rely on');
  });

  it('no command or entry decides a code of its own: every exit code comes from exit-codes.ts', () => {
    for (const dir of ['src/commands/', 'src/entry/']) {
      // launcher.ts (dist/cli.js) imports nothing it need not: its one code, 1 for a broken install, is written out.
      for (const file of readdirSync(new URL(dir, root)).filter((f) => f.endsWith('.ts') && f !== 'exit-codes.ts' && f !== 'launcher.ts')) {
        const text = readFileSync(new URL(dir + file, root), 'utf8');
        assert.doesNotMatch(text, /\bEXIT_\w+\s*=\s*\d/, `${dir}${file} defines an exit code`);
        assert.doesNotMatch(text, /\breturn\s+\d+\s*;|process\.exitCode\s*=\s*\d|process\.exit\(\d/, `${dir}${file} returns a literal exit code`);
      }
    }
  });
});
