import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import { credentialFileProblem, credentialValueProblem } from '../../src/config/credential-content.js';
import { createCredentialStore } from '../../src/token/credential-store.js';
import { ConfigError } from '../../src/shared/errors.js';
import { SecretSet } from '../../src/shared/secrets.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { captureIo } from '../helpers/command-io.js';

/** Raw file texts and what the shared rule says of them, for an ApiKey (header) and a password (body). */
const FILES: Array<{ text: string; header?: RegExp; body?: RegExp }> = [
  { text: 'key-1234\n' },
  { text: 'key-1234\r\n\n' },
  { text: '', header: /^is empty$/, body: /^is empty$/ },
  { text: '\n', header: /only whitespace/, body: /only whitespace/ },
  { text: ' \t\n', header: /only whitespace/, body: /only whitespace/ },
  { text: '\ufeffkey-1234\n', header: /byte-order mark/, body: /byte-order mark/ },
  { text: '  key-1234\n', header: /starts with whitespace/, body: /starts with whitespace/ },
  { text: '\nkey-1234\n', header: /starts with whitespace/, body: /starts with whitespace/ },
  { text: 'two words\n', header: /visible ASCII/ },
  { text: 'kéy-1234\n', header: /visible ASCII/ },
  { text: 'line1\nline2\n', header: /visible ASCII/, body: /control characters/ },
  { text: 'bad\ufffdutf8\n', header: /visible ASCII/, body: /invalid UTF-8/ },
];

describe('credential content: one rule for the store and check-config', () => {
  for (const { text, header, body } of FILES) {
    it(`${JSON.stringify(text)}: ApiKey ${header ? 'refused' : 'accepted'}, password ${body ? 'refused' : 'accepted'}`, () => {
      const h = credentialFileProblem(text, 'header');
      const b = credentialFileProblem(text, 'body');
      if (header) assert.match(h ?? '', header);
      else assert.equal(h, undefined);
      if (body) assert.match(b ?? '', body);
      else assert.equal(b, undefined);
    });
  }

  it('inline values follow the same character rules', () => {
    assert.match(credentialValueProblem('a b', 'header') ?? '', /visible ASCII/);
    assert.equal(credentialValueProblem('a b', 'body'), undefined);
  });

  it('the store and check-config refuse the same files with the same line, and print neither value', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-cred-content-'));
    try {
      const apiKeyFile = join(dir, 'api-key');
      const passwordFile = join(dir, 'password');
      writeFileSync(apiKeyFile, '\ufeffcontent-key-31337\n');
      writeFileSync(passwordFile, '   content-password-4242\n');
      const log = createCaptureLogger();
      const err = await createCredentialStore({ apiKeyFile, passwordFile }, { logger: log.logger, secrets: new SecretSet() }).catch((e: unknown) => e);
      assert.ok(err instanceof ConfigError);
      const run = captureIo({ B2B_BASE_URL: 'https://api.example.com', B2B_API_KEY_FILE: apiKeyFile, B2B_PASSWORD_FILE: passwordFile });
      assert.equal(await checkConfigCommand({}, run.io), 2);
      assert.equal(run.stderr(), `invalid configuration:\n${err.problems.map((p) => `  - ${p}\n`).join('')}(no --config given: the configuration comes from B2B_* environment variables only)\n`);
      assert.equal(err.problems.length, 2);
      assert.ok(!/content-(key|password)/.test(run.stderr() + run.stdout() + err.message));
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});
