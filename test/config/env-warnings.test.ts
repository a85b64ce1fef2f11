import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import { editDistance, unknownEnvWarnings } from '../../src/config/env-warnings.js';
import { captureIo } from '../helpers/command-io.js';

describe('unknown B2B_* environment variables', () => {
  it('computes the Levenshtein distance', () => {
    // The textbook pair (Levenshtein 1966; e.g. Wikipedia's "kitten" → "sitting" example): 3.
    assert.equal(editDistance('kitten', 'sitting'), 3);
    assert.equal(editDistance('', 'abc'), 3);
    assert.equal(editDistance('B2B_PASSWORD', 'B2B_PASSWORD'), 0);
  });

  it('names the closest known variable and never the value', () => {
    const warnings = unknownEnvWarnings({ B2B_PASWORD: 'secret-value-1', B2B_APIKEY: 'secret-value-2', B2B_LISTEN_PORT: '8080', HOME: '/root', B2B_LOGLEVEL: 'debug' });
    assert.deepEqual(warnings, [
      'environment variable B2B_APIKEY is not a setting and is ignored (did you mean B2B_API_KEY?)',
      'environment variable B2B_LOGLEVEL is not a setting and is ignored (did you mean B2B_LOG_LEVEL?)',
      'environment variable B2B_PASWORD is not a setting and is ignored (did you mean B2B_PASSWORD?)',
    ]);
    assert.ok(!warnings.join().includes('secret-value'));
  });

  it('check-config prints the warning on stderr and still exits 0 for a valid config', async () => {
    const run = captureIo({ B2B_BASE_URL: 'https://api.example.com', B2B_API_KEY: 'k-1234', B2B_PASSWORD: 'p-1234', B2B_CA_FIEL: '/etc/ca.pem' });
    assert.equal(await checkConfigCommand({}, run.io), 0);
    assert.equal(run.stderr(), 'warning: environment variable B2B_CA_FIEL is not a setting and is ignored (did you mean B2B_CA_FILE?)\n'
      + 'note: no --config given: the configuration comes from B2B_* environment variables only\n');
  });
});
