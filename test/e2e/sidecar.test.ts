import assert from 'node:assert/strict';
import { Server } from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { Signal } from '../../src/commands/io.js';
import { serve } from '../../src/commands/run.js';
import { validateConfig } from '../../src/config/validate-config.js';
import { StoppedDuringStartError } from '../../src/shared/errors.js';
import { createSidecar } from '../../src/sidecar.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { CREDENTIALS, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

type Simulator = Awaited<ReturnType<typeof startSimulator>>;
let sim: Simulator;
before(async () => {
  sim = await startSimulator();
});
after(async () => {
  await sim.stop();
});

/**
 * Records every server that starts listening from now on (the simulator already listens), so a
 * test can check that none is left open. Test-scoped: `restore()` puts listen back.
 */
function recordListeners(): { servers: Server[]; open(): Server[]; restore(): void } {
  const servers: Server[] = [];
  const original = Server.prototype.listen;
  Server.prototype.listen = function (this: Server, ...args: unknown[]) {
    servers.push(this);
    return (original as (...a: unknown[]) => Server).apply(this, args);
  } as typeof original;
  return { servers, open: () => servers.filter((s) => s.listening), restore: () => void (Server.prototype.listen = original) };
}

/** A sidecar with every part configured (localization too: one more await in start-up) on a fake clock. */
async function sidecarFor(shutdown: { delaySeconds: number } = { delaySeconds: 0 }) {
  const config = validateConfig({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    service: { baseUrl: sim.baseUrl, caFile: (await testTls()).caFile },
    credentials: CREDENTIALS,
    localization: { baseUrl: 'https://l10n.example.invalid', token: 'l10n-token-1' },
    shutdown,
  });
  const clock = new FakeClock();
  const log = createCaptureLogger();
  const sidecar = createSidecar(config, { logger: log.logger, secrets: log.secrets, clock });
  const messages = () => log.lines().map((l) => l.message);
  return { sidecar, clock, log, messages };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

// Bounded: a regression here hangs (a wait for a delay on the fake clock, a listener left open).
describe('sidecar lifecycle', { timeout: 20_000 }, () => {
  it('a stop during start-up stops every part', async () => {
    // Stops after 0, 1, 2 … turns of the event loop, so the stop lands at every await of start-up
    // and, at the end, after it.
    const outcomes = { stoppedDuringStart: 0, startedThenStopped: 0 };
    for (let turns = 0; turns < 40; turns++) {
      const listeners = recordListeners();
      try {
        const { sidecar, clock, messages } = await sidecarFor();
        const starting = sidecar.start().then(() => 'started' as const, (err: unknown) => err);
        for (let i = 0; i < turns; i++) await turn();
        await sidecar.stop();
        const outcome = await starting;
        if (outcome === 'started') {
          outcomes.startedThenStopped++;
        } else {
          assert.ok(outcome instanceof StoppedDuringStartError, `after ${turns} turns start() failed with ${String(outcome)}`);
          outcomes.stoppedDuringStart++;
          assert.ok(!messages().includes('sidecar started'), `after ${turns} turns`);
        }
        assert.deepEqual(listeners.open(), [], `a listener is left open after a stop ${turns} turns into start-up`);
        assert.equal(clock.pending, 0, `a timer is left after a stop ${turns} turns into start-up`);
        assert.equal(messages().filter((m) => m === 'sidecar stopped').length, 1);
        await sidecar.done;
      } finally {
        listeners.restore();
      }
    }
    assert.ok(outcomes.stoppedDuringStart > 0 && outcomes.startedThenStopped > 0, JSON.stringify(outcomes));
  });

  it('a drain during start-up stops at once, without waiting for shutdown.delaySeconds', async () => {
    const listeners = recordListeners();
    try {
      const { sidecar, clock } = await sidecarFor({ delaySeconds: 30 });
      const starting = sidecar.start().then(() => 'started', (err: unknown) => err);
      await sidecar.drain(); // the fake clock never moves: a wait for the delay would hang here
      assert.ok((await starting) instanceof StoppedDuringStartError);
      assert.deepEqual(listeners.open(), []);
      assert.equal(clock.pending, 0);
    } finally {
      listeners.restore();
    }
  });

  it('stop() before start() makes start() fail without starting anything', async () => {
    const listeners = recordListeners();
    try {
      const { sidecar } = await sidecarFor();
      await sidecar.stop();
      await assert.rejects(sidecar.start(), StoppedDuringStartError);
      assert.deepEqual(listeners.servers, []);
    } finally {
      listeners.restore();
    }
  });

  it('SIGTERM during start-up makes run exit 0 with nothing left running', async () => {
    const listeners = recordListeners();
    try {
      const { sidecar, clock, log, messages } = await sidecarFor();
      const handlers = new Map<Signal, () => void>();
      const io = { stdout: process.stdout, stderr: process.stderr, env: {}, onSignal: (s: Signal, h: () => void) => void handlers.set(s, h) };
      const code = serve(sidecar, io, log.logger);
      handlers.get('SIGTERM')!(); // serve() has installed its handlers and is awaiting start()
      assert.equal(await code, 0);
      assert.deepEqual(listeners.open(), []);
      assert.equal(clock.pending, 0);
      assert.ok(!messages().includes('sidecar started'));
      assert.ok(!messages().includes('token obtained'), 'no token is requested after the signal');
    } finally {
      listeners.restore();
    }
  });
});
