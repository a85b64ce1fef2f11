import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { parseDuration, waitCommand } from '../../src/commands/wait.js';
import { captureIo } from '../helpers/command-io.js';
import { startSidecar, startSimulator } from '../helpers/stack.js';
import { startVendor } from '../helpers/vendors.js';

describe('wait', () => {
  it('exits 0 once the sidecar is ready', async (t) => {
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    t.after(() => s.stop());
    const run = captureIo({});
    assert.equal(await waitCommand({ admin: `http://127.0.0.1:${s.adminPort}`, timeout: '10s', intervalMs: 20 }, run.io), 0, run.stderr());
    assert.match(run.stdout(), /^ready: http:\/\/127\.0\.0\.1:\d+\/readyz answered 200$/m);
  });

  it('exits 1 with the last readiness message when the sidecar never gets a token', async (t) => {
    // A vendor whose gentoken refuses: the sidecar stays not ready.
    const vendor = await startVendor(() => undefined);
    t.after(() => vendor.close());
    const s = await startSidecar({ baseUrl: vendor.url, credentials: { apiKey: 'wrong-key-123456', password: 'wrong-password-1' } });
    t.after(() => s.stop());
    const run = captureIo({});
    assert.equal(await waitCommand({ admin: `http://127.0.0.1:${s.adminPort}`, timeout: '300ms', intervalMs: 20 }, run.io), 1);
    assert.match(run.stderr(), /^not ready after 0\.3 s: http:\/\/127\.0\.0\.1:\d+\/readyz last answered 503 "(no token yet|credentials rejected by the auth server)"$/m);
  });

  it('exits 1 naming the address when nothing listens, and 2 for a bad option', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const gone = captureIo({});
    assert.equal(await waitCommand({ admin: `http://127.0.0.1:${port}`, timeout: '100ms', intervalMs: 20 }, gone.io), 1);
    assert.match(gone.stderr(), /last could not be reached \(ECONNREFUSED\)/);
    for (const args of [{ timeout: 'soon', admin: 'http://127.0.0.1:1' }, { admin: 'ftp://x' }]) {
      const bad = captureIo({});
      assert.equal(await waitCommand(args, bad.io), 2, JSON.stringify(args));
    }
  });

  it('reads durations as 30s, 500ms, 2m or plain seconds', () => {
    assert.equal(parseDuration('30s'), 30_000);
    assert.equal(parseDuration('500ms'), 500);
    assert.equal(parseDuration('2m'), 120_000);
    assert.equal(parseDuration('1.5'), 1500);
    assert.equal(parseDuration('0s'), undefined);
    assert.equal(parseDuration('-1s'), undefined);
  });
});
