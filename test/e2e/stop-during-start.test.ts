import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Runs in a fresh process so that the localization part's module is not in the import cache:
 * its dynamic import is then a real wait, the moment a SIGTERM during start-up most likely lands.
 */
const SCRIPT = `
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { validateConfig } from './src/config/validate-config.ts';
import { createSidecar } from './src/sidecar.ts';
import { createCaptureLogger } from './test/helpers/capture-logger.ts';
import { FakeClock } from './test/helpers/fake-clock.ts';
const dir = mkdtempSync(join(tmpdir(), 'b2b-stop-'));
writeFileSync(join(dir, 'l10n-token'), 'l10n-token-123456\\n');
const config = validateConfig({
  listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 },
  service: { baseUrl: 'https://127.0.0.1:1' },
  credentials: { apiKey: 'test-api-key-0123456789', password: 'test-password-9876543210' },
  localization: { baseUrl: 'https://127.0.0.1:2', tokenFile: join(dir, 'l10n-token'), watch: ['proj/comp/en'] },
});
const clock = new FakeClock();
const log = createCaptureLogger();
const sidecar = createSidecar(config, { logger: log.logger, secrets: log.secrets, clock });
const starting = sidecar.start().then(() => 'started', (e) => e.name);
// The service part exists just before the localization part is imported: stop exactly then.
while (sidecar.tokens === undefined) await new Promise((r) => setImmediate(r));
await sidecar.stop();
const outcome = await starting;
await new Promise((r) => setTimeout(r, 100));
process.stdout.write(JSON.stringify({ outcome, pendingTimers: clock.pending, messages: log.lines().map((l) => l.message) }));
`;

describe('a stop during start-up', () => {
  it('leaves no part running when it lands while the localization part is being imported', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', SCRIPT], { cwd: ROOT, timeout: 30_000 });
    const result = JSON.parse(stdout) as { outcome: string; pendingTimers: number; messages: string[] };
    assert.equal(result.outcome, 'StoppedDuringStartError');
    assert.equal(result.pendingTimers, 0, 'the translation poller outlived stop()');
    assert.equal(result.messages.at(-1), 'sidecar stopped');
  });
});
