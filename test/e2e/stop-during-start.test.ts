import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { validateConfig } from '../../src/config/validate-config.js';
import { createSidecar } from '../../src/sidecar.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { FakeClock } from '../helpers/fake-clock.js';

describe('a stop during start-up', () => {
  it('leaves no part running when it lands while the localization part is being imported', async () => {
    // The import is held open by the test, so the stop lands inside it on every runtime: a
    // module loader that reads the file synchronously (tsx on Node 24) would otherwise finish
    // the whole start-up before a poll could see the moment.
    const dir = mkdtempSync(join(tmpdir(), 'b2b-stop-'));
    try {
      writeFileSync(join(dir, 'l10n-token'), 'l10n-token-123456\n', { mode: 0o600 });
      const config = validateConfig({
        listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 },
        service: { baseUrl: 'https://127.0.0.1:1' },
        credentials: { apiKey: 'test-api-key-0123456789', password: 'test-password-9876543210' },
        localization: { baseUrl: 'https://127.0.0.1:2', tokenFile: join(dir, 'l10n-token'), watch: ['proj/comp/en'] },
      });
      const clock = new FakeClock();
      const log = createCaptureLogger();
      let importing!: () => void;
      const importStarted = new Promise<void>((resolve) => { importing = resolve; });
      let finishImport!: () => void;
      let made = false;
      const held = new Promise<void>((resolve) => { finishImport = resolve; });
      const sidecar = createSidecar(config, {
        logger: log.logger, secrets: log.secrets, clock,
        loadLocalizationPart: async () => {
          importing();
          await held;
          const part = await import('../../src/localization/localization-part.js');
          return { ...part, startLocalizationPart: (...args: Parameters<typeof part.startLocalizationPart>) => { made = true; return part.startLocalizationPart(...args); } };
        },
      });
      const starting = sidecar.start().then(() => 'started', (e: Error) => e.name);
      await importStarted;
      assert.ok(sidecar.tokens, 'the service part exists when the localization part is imported');
      const stopping = sidecar.stop();
      finishImport();
      await stopping;
      assert.equal(await starting, 'StoppedDuringStartError');
      assert.equal(made, false, 'the localization part was made after the stop');
      assert.equal(clock.pending, 0, 'the token loop or the translation poller outlived stop()');
      assert.equal(log.lines().at(-1)?.message, 'sidecar stopped');
      assert.ok(!log.lines().some((l) => l.message === 'sidecar started'), 'start-up went on past the stop');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
