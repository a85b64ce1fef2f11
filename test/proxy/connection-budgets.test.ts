import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { fullListenerLogger } from '../../src/proxy/listener/full-listener.js';

/** Opens `n` connections from `localAddress` that never send a byte; resolves with what each received before closing (or '' while open). */
async function idleConnections(port: number, localAddress: string, n: number): Promise<{ sockets: Socket[]; answers: string[] }> {
  const sockets: Socket[] = [];
  const answers: string[] = Array.from({ length: n }, () => '');
  await Promise.all(Array.from({ length: n }, (_, i) => new Promise<void>((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress }, () => resolve());
    socket.on('data', (d) => (answers[i] += d.toString('latin1')));
    socket.on('error', () => undefined);
    socket.once('error', reject);
    sockets.push(socket);
  })));
  // Let the listener judge them: refused ones are answered and closed at once.
  await new Promise((r) => setTimeout(r, 200));
  return { sockets, answers };
}

/** The status of /healthz, or 0 when the listener did not answer within 3 s. */
async function healthz(s: RunningSidecar): Promise<number> {
  const timeout = new Promise<number>((r) => setTimeout(() => r(0), 3000).unref());
  return Promise.race([send(s.adminPort, { path: '/healthz' }).then((a) => a.status, () => 0), timeout]);
}

describe('connection budgets one client cannot drain', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  before(async () => {
    sim = await startSimulator();
  });
  after(() => sim.stop());

  it('64 idle connections from a source admin.allow refuses are closed as they open; /healthz still answers', async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { admin: { allow: ['127.0.0.1/32'] } } });
    const { sockets, answers } = await idleConnections(s.adminPort, '127.0.0.2', 64);
    try {
      assert.equal(await healthz(s), 200);
      assert.ok(answers.every((a) => a.startsWith('HTTP/1.1 403 ')), answers[0]);
      const metrics = (await send(s.adminPort, { path: '/metrics' })).body.toString();
      assert.match(metrics, /b2b_sidecar_connections_refused_total\{listener="admin",reason="not_allowed"\} 64/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await s.stop();
    }
  });

  it('an allowed source holds at most admin.maxConnectionsPerSource idle connections; others still reach /healthz', async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    const { sockets, answers } = await idleConnections(s.adminPort, '127.0.0.2', 64);
    try {
      assert.equal(await healthz(s), 200);
      assert.equal(answers.filter((a) => a === '').length, 8, 'the first 8 stay open');
      assert.ok(answers.filter((a) => a !== '').every((a) => a.startsWith('HTTP/1.1 503 ') && a.includes('too many connections from this address')));
      const metrics = (await send(s.adminPort, { path: '/metrics' })).body.toString();
      assert.match(metrics, /b2b_sidecar_connections_refused_total\{listener="admin",reason="per_source_limit"\} 56/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await s.stop();
    }
  });

  it('the proxy listener caps connections per source (proxy.maxConnectionsPerSource) and serves the rest', async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { proxy: { maxConnectionsPerSource: 4 }, guard: { allow: ['127.0.0.1/32', '127.0.0.2/32'] } } });
    const { sockets, answers } = await idleConnections(s.port, '127.0.0.2', 10);
    try {
      assert.equal(answers.filter((a) => a === '').length, 4);
      await waitReady(s);
      const res = await send(s.port, { path: '/pub/b2b/v1/objects/obj-42' });
      assert.equal(res.status, 200);
    } finally {
      for (const socket of sockets) socket.destroy();
      await s.stop();
    }
  });

  it('1,100 connections against proxy.maxConnections 1,024: the 76 Node drops are counted (reason max_connections) and logged, naming the setting to raise', async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { proxy: { maxConnections: 1024, maxConnectionsPerSource: 2048 } } });
    const sockets: Socket[] = [];
    let closedEarly = 0;
    try {
      for (let batch = 0; batch < 11; batch++) {
        await Promise.all(Array.from({ length: 100 }, () => new Promise<void>((resolve) => {
          const socket = connect({ port: s.port, host: '127.0.0.1' }, () => resolve());
          socket.on('error', () => resolve());
          socket.once('close', () => {
            closedEarly++;
            resolve();
          });
          sockets.push(socket);
        })));
      }
      const deadline = Date.now() + 10_000;
      let metrics = '';
      while (Date.now() < deadline) {
        metrics = (await send(s.adminPort, { path: '/metrics' })).body.toString();
        if (/connections_refused_total\{listener="proxy",reason="max_connections"\} 76\b/.test(metrics) && closedEarly >= 76) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.match(metrics, /^b2b_sidecar_connections_refused_total\{listener="proxy",reason="max_connections"\} 76$/m);
      assert.equal(closedEarly, 76, 'exactly the connections past the limit were closed');
      const full = s.log.lines().filter((l) => l.message === 'connections refused: the listener is full');
      assert.equal(full.length, 1, 'logged once, not once per connection');
      assert.equal(full[0]!.level, 'warn');
      assert.equal(full[0]!.listener, 'proxy');
      assert.equal(full[0]!.limit, 1024);
      assert.equal(full[0]!.refused, 1, 'the first refusal is logged at once');
      assert.match(String(full[0]!.remedy), /raise proxy\.maxConnections/);
    } finally {
      for (const socket of sockets) socket.destroy();
      await s.stop();
    }
  });
});

describe('a full listener is logged at most once a minute', () => {
  it('the first refusal at once, then one line a minute counting the refusals since the last', () => {
    const log = createCaptureLogger();
    let now = 0;
    const refused = fullListenerLogger(log.logger, 1024, { listener: 'proxy', remedy: 'raise proxy.maxConnections', now: () => now });
    for (const at of [0, 1_000, 30_000, 59_999]) {
      now = at;
      refused();
    }
    now = 60_000;
    refused();
    now = 60_001;
    refused();
    const lines = log.lines().filter((l) => l.message === 'connections refused: the listener is full');
    assert.deepEqual(lines.map((l) => l.refused), [1, 4]);
    assert.ok(lines.every((l) => l.remedy === 'raise proxy.maxConnections' && l.limit === 1024 && l.listener === 'proxy'));
  });
});
