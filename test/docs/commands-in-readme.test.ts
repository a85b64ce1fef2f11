import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

/**
 * Every command the CLI defines is named in the README, so an operator reading it learns that the
 * command exists (the recipe "A command" in docs/architecture.md). The commands are read from the
 * CLI's own definitions, not listed here, so a new command fails this test until the README names it.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = readFileSync(`${ROOT}src/entry/cli-bundle.ts`, 'utf8');
const README = readFileSync(`${ROOT}README.md`, 'utf8');

/** The names in `program.command('<name>')`. */
export function definedCommands(source: string): string[] {
  return [...source.matchAll(/\.command\('([a-z][a-z-]*)'\)/g)].map((m) => m[1]!);
}

/** The commands the README never names in backticks, alone or after `b2b-sidecar`. */
export function unnamedIn(readme: string, commands: readonly string[]): string[] {
  return commands.filter((c) => !readme.includes(`\`${c}\``) && !new RegExp(`b2b-sidecar ${c}\\b`).test(readme));
}

describe('commands in the README', () => {
  it('reads the commands from the CLI definitions', () => {
    const commands = definedCommands(CLI);
    for (const c of ['run', 'demo', 'doctor', 'status', 'wait', 'healthcheck', 'check-config']) assert.ok(commands.includes(c), c);
  });

  it('names every command the CLI defines', () => {
    assert.deepEqual(unnamedIn(README, definedCommands(CLI)), []);
  });

  it('notices a command the README does not name', () => {
    const planted = `${CLI}\nprogram.command('rotate-keys').description('x');\n`;
    assert.deepEqual(unnamedIn(README, definedCommands(planted)), ['rotate-keys']);
  });
});
