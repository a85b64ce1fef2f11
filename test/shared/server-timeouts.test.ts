import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { Server as HttpServer } from 'node:http';
import { Server as NetServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { SERVER_TIMEOUTS, setServerTimeouts, type ServerTimeouts } from '../../src/shared/server-timeouts.js';
import { createLocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { CREDENTIALS, startSidecar, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * Every HTTP(S) server the product creates sets all its timeouts itself (docs/traps.md T60): Node's
 * defaults are loose and changed between releases. Each server that starts listening while the
 * sidecar (proxy, admin and unix-socket listeners) and both simulators start is collected, and must
 * carry the values setServerTimeouts gave it — a server left on a default has none.
 */
const work = mkdtempSync(join(tmpdir(), 'b2b-server-timeouts-'));
after(() => rmSync(work, { recursive: true, force: true }));

type Marked = HttpServer & { [SERVER_TIMEOUTS]?: ServerTimeouts };

describe('server timeouts', () => {
  it('are all set explicitly on every server the sidecar and the simulators create', async () => {
    const started: Marked[] = [];
    const listen = NetServer.prototype.listen;
    NetServer.prototype.listen = function (this: NetServer, ...args: unknown[]) {
      if (this instanceof HttpServer || 'headersTimeout' in this) started.push(this as Marked);
      return (listen as (...a: unknown[]) => NetServer).apply(this, args);
    } as typeof listen;
    const stops: Array<() => Promise<void>> = [];
    try {
      const sim = await startSimulator();
      stops.push(() => sim.stop());
      const l10n = createLocalizationSimulator({ token: 'l10n-token', tls: await testTls() });
      await l10n.start();
      stops.push(() => l10n.stop());
      const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { listen: { socket: join(work, 'sidecar.sock') } }, credentials: CREDENTIALS });
      stops.push(() => s.stop());
    } finally {
      NetServer.prototype.listen = listen;
      for (const stop of stops.reverse()) await stop();
    }
    // b2b simulator, localization simulator, proxy listener, admin listener, unix socket listener
    assert.equal(started.length, 5, `servers that listened: ${started.length}`);
    for (const server of started) {
      const set = server[SERVER_TIMEOUTS];
      assert.ok(set, 'a server listened with Node\'s default timeouts');
      assert.deepEqual(
        { headersTimeoutMs: server.headersTimeout, requestTimeoutMs: server.requestTimeout, keepAliveTimeoutMs: server.keepAliveTimeout, idleTimeoutMs: server.timeout },
        set,
      );
      for (const [name, ms] of Object.entries(set)) assert.ok(Number.isInteger(ms) && ms >= 0, `${name}: ${ms}`);
      assert.ok(set.headersTimeoutMs <= set.requestTimeoutMs, 'headers within the request time');
    }
  });

  it('setServerTimeouts sets all four over whatever the runtime defaults to', () => {
    const server = new HttpServer();
    const timeouts = { headersTimeoutMs: 1234, requestTimeoutMs: 5678, keepAliveTimeoutMs: 910, idleTimeoutMs: 1112 };
    setServerTimeouts(server, timeouts);
    assert.deepEqual([server.headersTimeout, server.requestTimeout, server.keepAliveTimeout, server.timeout], [1234, 5678, 910, 1112]);
    assert.deepEqual((server as Marked)[SERVER_TIMEOUTS], timeouts);
  });
});
