import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import { validateConfig } from '../../src/config/validate-config.js';
import { configWarnings } from '../../src/config/warnings.js';
import { captureIo } from '../helpers/command-io.js';

const base = { service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'k-123456', password: 'p-123456' } };
const WARNING = 'proxy.timeoutMs is deprecated: it is the old name of service.timeoutMs (the same setting), which it overrides; service.timeoutMs is 45000 now: set that and remove proxy.timeoutMs';

describe('deprecated keys (config/aliases.ts)', () => {
  it('proxy.timeoutMs still sets the service deadline, over service.timeoutMs, and is warned about', () => {
    const config = validateConfig({ ...base, service: { ...base.service, timeoutMs: 20000 }, proxy: { timeoutMs: 45000 } });
    assert.equal(config.service.timeoutMs, 45000, 'the old key overrides, as it always did');
    assert.deepEqual(configWarnings(config).map((w) => w.message), [WARNING]);
  });

  it('without proxy.timeoutMs nothing changes and nothing is warned', () => {
    const config = validateConfig({ ...base, service: { ...base.service, timeoutMs: 20000 } });
    assert.equal(config.service.timeoutMs, 20000);
    assert.equal(config.proxy.timeoutMs, undefined);
    assert.deepEqual(configWarnings(config), []);
  });

  it('is still bounded like every millisecond key', () => {
    assert.throws(() => validateConfig({ ...base, proxy: { timeoutMs: 2 ** 31 } }), /proxy\.timeoutMs: must be <= 2147483647/);
  });

  it('check-config prints the warning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-aliases-'));
    const file = join(dir, 'sidecar.yaml');
    writeFileSync(file, 'service:\n  baseUrl: https://api.example.com\nproxy:\n  timeoutMs: 45000\n', { mode: 0o600 });
    const run = captureIo({ B2B_API_KEY: 'k-123456', B2B_PASSWORD: 'p-123456' });
    assert.equal(await checkConfigCommand({ config: file }, run.io), 0);
    assert.ok(run.stderr().split('\n').includes(`warning: ${WARNING}`), run.stderr());
  });
});
