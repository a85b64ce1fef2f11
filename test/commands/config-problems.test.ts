import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import type { CommandIo } from '../../src/commands/io.js';
import { runCommand } from '../../src/commands/run.js';
import { tokenCommand } from '../../src/commands/token.js';
import { captureIo } from '../helpers/command-io.js';

const dir = mkdtempSync(join(tmpdir(), 'b2b-config-problems-'));
let counter = 0;

function file(name: string, text: string): string {
  const path = join(dir, `${counter++}-${name}`);
  writeFileSync(path, text);
  return path;
}


type Command = 'check-config' | 'run' | 'token';
const COMMANDS: Record<Command, (config: string, io: CommandIo) => Promise<number>> = {
  'check-config': (config, io) => checkConfigCommand({ config }, io),
  run: (config, io) => runCommand({ config }, io),
  token: (config, io) => tokenCommand({ config }, io),
};

/** A config whose service is never contacted: every case fails before a request is made. */
function config(credentials: string, extra = ''): string {
  return [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    'service: { baseUrl: "https://api.example.invalid" }',
    'credentials:',
    credentials,
    extra,
  ].join('\n');
}

describe('configuration problems in every command', () => {
  it('a password starting with * is never printed and exits 2', async () => {
    // Unquoted, `*Secr3tPass` is a YAML alias; yaml's own error message names it.
    const path = file('alias.yaml', config('  apiKey: key-1\n  password: *Secr3tPass'));
    for (const [name, command] of Object.entries(COMMANDS)) {
      const run = captureIo();
      assert.equal(await command(path, run.io), 2, `${name}: ${(run.stdout() + run.stderr())}`);
      assert.match(run.stderr(), /unresolved YAML alias at line 6: quote values that start with \* & or !/, name);
      assert.ok(!(run.stdout() + run.stderr()).includes('Secr3tPass'), `${name} printed the password: ${(run.stdout() + run.stderr())}`);
    }
  });

  const emptyFile = file('empty-key', '');
  const blankFile = file('blank-password', '\n');
  const nonAsciiFile = file('non-ascii-key', 'kéy-file-43\n');
  const l10nTokenFile = file('l10n-token', 'wlu_tök-44\n');
  // check-config reads credential files by the store's rules, so every command finds every row.
  const rows: Array<{ name: string; yaml: string; key: string; secret?: string; foundBy: Command[] }> = [
    { name: 'an inline ApiKey with a space', yaml: config('  apiKey: "key with space-41"\n  password: p-1'), key: 'credentials.apiKey (B2B_API_KEY)', secret: 'space-41', foundBy: ['check-config', 'run', 'token'] },
    { name: 'an inline localization token with a non-ASCII character', yaml: config('  apiKey: key-1\n  password: p-1', 'localization: { baseUrl: "https://l.example.invalid", token: "tök-en-42" }'), key: 'localization.token (B2B_L10N_TOKEN)', secret: 'en-42', foundBy: ['check-config', 'run', 'token'] },
    { name: 'an empty ApiKey file', yaml: config(`  apiKeyFile: ${emptyFile}\n  password: p-1`), key: 'credentials.apiKeyFile (B2B_API_KEY_FILE)', foundBy: ['check-config', 'run', 'token'] },
    { name: 'a password file holding only a newline', yaml: config(`  apiKey: key-1\n  passwordFile: ${blankFile}`), key: 'credentials.passwordFile (B2B_PASSWORD_FILE)', foundBy: ['check-config', 'run', 'token'] },
    { name: 'an ApiKey file with a non-ASCII character', yaml: config(`  apiKeyFile: ${nonAsciiFile}\n  password: p-1`), key: 'credentials.apiKeyFile (B2B_API_KEY_FILE)', secret: 'file-43', foundBy: ['check-config', 'run', 'token'] },
    { name: 'a localization token file with a non-ASCII character', yaml: config('  apiKey: key-1\n  password: p-1', `localization: { baseUrl: "https://l.example.invalid", tokenFile: ${l10nTokenFile} }`), key: 'localization.tokenFile (B2B_L10N_TOKEN_FILE)', secret: 'tök-44', foundBy: ['check-config', 'run', 'token'] },
  ];
  for (const row of rows) {
    it(`${row.name} exits 2 naming ${row.key}, never the value, in ${row.foundBy.join(', ')}`, async () => {
      const path = file('c.yaml', row.yaml);
      for (const name of row.foundBy) {
        const run = captureIo();
        assert.equal(await COMMANDS[name](path, run.io), 2, `${name}: ${(run.stdout() + run.stderr())}`);
        assert.match(run.stderr(), /^invalid configuration:\n/, name);
        assert.ok(run.stderr().split('\n').some((l) => l.startsWith(`  - ${row.key}: `)), `${name} does not name ${row.key}: ${run.stderr()}`);
        if (row.secret) assert.ok(!(run.stdout() + run.stderr()).includes(row.secret), `${name} printed the value: ${(run.stdout() + run.stderr())}`);
      }
    });
  }
});
