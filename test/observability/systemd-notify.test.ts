import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createSystemdNotifier, watchdogPingMs, type NotifyState } from '../../src/observability/systemd-notify.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { FakeClock } from '../helpers/fake-clock.js';

/** A spawn that records each systemd-notify run and lets the test end it. */
function fakeSpawn() {
  const runs: { args: string[]; env: NodeJS.ProcessEnv; end(err?: Error): Promise<void> }[] = [];
  const spawn = (args: readonly string[], env: NodeJS.ProcessEnv) =>
    new Promise<void>((resolve, reject) => {
      runs.push({
        args: [...args], env,
        end: async (err) => {
          if (err) reject(err);
          else resolve();
          // Let the notifier's then/finally run and start the next child.
          await new Promise((r) => setImmediate(r));
        },
      });
    });
  return { spawn, runs, fields: (i: number) => runs[i]!.args.filter((a) => !a.startsWith('--')) };
}

function state(initial: { ready?: boolean; reason?: string; live?: boolean } = {}) {
  const s = { ready: initial.ready ?? false, reason: initial.reason ?? 'no token yet', live: initial.live ?? true, liveReason: 'stuck' };
  const view: NotifyState = {
    health: () => (s.ready ? { ready: true } : { ready: false, reason: s.reason }),
    live: () => (s.live ? { live: true } : { live: false, reason: s.liveReason }),
  };
  return { s, view };
}

const ENV = { NOTIFY_SOCKET: '/run/systemd/notify', PATH: '/usr/bin:/bin', B2B_PASSWORD: 'secret-123' };

describe('systemd notifier', () => {
  it('does nothing without NOTIFY_SOCKET: no child, no timer', () => {
    const clock = new FakeClock();
    const { spawn, runs } = fakeSpawn();
    const n = createSystemdNotifier({ env: { WATCHDOG_USEC: '1000000' }, pid: 42, clock, logger: createCaptureLogger().logger, spawn });
    n.started(state({ ready: true }).view);
    n.stopping();
    clock.advance(120_000);
    n.close();
    assert.equal(runs.length, 0);
    assert.equal(clock.pending, 0);
  });

  it('sends READY=1 only once the sidecar is ready, with its status and MAINPID; the child gets only NOTIFY_SOCKET and PATH', async () => {
    const clock = new FakeClock();
    const { spawn, runs, fields } = fakeSpawn();
    const { s, view } = state();
    const n = createSystemdNotifier({ env: ENV, pid: 42, clock, logger: createCaptureLogger().logger, spawn });
    n.started(view);
    assert.deepEqual(runs[0]!.args, ['--pid=42', 'STATUS=not ready: no token yet']);
    assert.deepEqual(runs[0]!.env, { NOTIFY_SOCKET: '/run/systemd/notify', PATH: '/usr/bin:/bin' });
    await runs[0]!.end();
    clock.advance(2_000);
    assert.equal(runs.length, 1, 'an unchanged status is not sent again');
    s.ready = true;
    clock.advance(500);
    assert.deepEqual(fields(1), ['READY=1', 'STATUS=ready']);
    await runs[1]!.end();
    clock.advance(60_000);
    assert.equal(runs.length, 2, 'READY=1 once, and no fallback after it');
    n.close();
    assert.equal(clock.pending, 0);
  });

  it('keeps one child in flight and sends what queued meanwhile together, the newest STATUS= only; STATUS= at most every 5 s', async () => {
    const clock = new FakeClock();
    const { spawn, runs, fields } = fakeSpawn();
    const { s, view } = state();
    const n = createSystemdNotifier({ env: { ...ENV, WATCHDOG_USEC: '4000000' }, pid: 42, clock, logger: createCaptureLogger().logger, spawn });
    n.started(view);
    assert.deepEqual(fields(0), ['STATUS=not ready: no token yet']);
    // The first child hangs: statuses and pings pile up behind it.
    for (let i = 1; i <= 8; i++) {
      s.reason = `auth server asked to slow down (Retry-After); no gentoken call for ${60 - i} s`;
      clock.advance(1_000);
    }
    assert.equal(runs.length, 1, 'never a second child while one runs');
    await runs[0]!.end();
    assert.equal(runs.length, 2);
    // One message: the status of the check at 5 s (not the newest reason: 5 s had not passed since), and one ping for four.
    assert.deepEqual(fields(1), ['STATUS=not ready: auth server asked to slow down (Retry-After); no gentoken call for 55 s', 'WATCHDOG=1']);
    await runs[1]!.end();
    // Counting down each second: a new STATUS= at most every 5 s.
    for (let i = 9; i <= 14; i++) {
      s.reason = `auth server asked to slow down (Retry-After); no gentoken call for ${60 - i} s`;
      clock.advance(1_000);
      for (const r of runs.slice(2)) await r.end();
    }
    const statuses = runs.slice(2).flatMap((r) => r.args.filter((a) => a.startsWith('STATUS=')));
    assert.equal(statuses.length, 1, statuses.join(' | '));
    n.close();
  });

  it('pings WATCHDOG=1 at half of WATCHDOG_USEC only while live() is true, and says once why it stopped', async () => {
    const clock = new FakeClock();
    const { spawn, runs } = fakeSpawn();
    const { s, view } = state({ ready: true });
    const log = createCaptureLogger();
    const n = createSystemdNotifier({ env: { ...ENV, WATCHDOG_USEC: '2000000', WATCHDOG_PID: '42' }, pid: 42, clock, logger: log.logger, spawn });
    const pings = () => runs.filter((r) => r.args.includes('WATCHDOG=1')).length;
    n.started(view);
    assert.deepEqual(runs[0]!.args, ['--pid=42', 'READY=1', 'STATUS=ready']);
    await runs[0]!.end(); // then the first ping, queued behind it
    assert.equal(pings(), 1);
    const tick = async () => {
      await runs.at(-1)!.end();
      clock.advance(1_000);
    };
    for (let i = 0; i < 4; i++) await tick();
    assert.equal(pings(), 5, 'every 1 s');
    s.live = false;
    for (let i = 0; i < 5; i++) await tick();
    assert.equal(pings(), 5, 'no ping while the token loop is stuck');
    const warnings = log.lines().filter((l) => l.level === 'warn');
    assert.equal(warnings.length, 1);
    assert.match(String(warnings[0]!.message), /withholding the systemd watchdog ping/);
    assert.equal(warnings[0]!.reason, 'stuck');
    s.live = true;
    await tick();
    assert.equal(pings(), 6, 'pings again once live');
    n.close();
    clock.advance(10_000);
    assert.equal(pings(), 6, 'none after close');
  });

  it('logs no watchdog warning on a graceful stop: the token loop stopped on purpose, the pings go on', async () => {
    const clock = new FakeClock();
    const { spawn, runs } = fakeSpawn();
    const { s, view } = state({ ready: true });
    const log = createCaptureLogger();
    const n = createSystemdNotifier({ env: { ...ENV, WATCHDOG_USEC: '2000000', WATCHDOG_PID: '42' }, pid: 42, clock, logger: log.logger, spawn });
    const pings = () => runs.filter((r) => r.args.includes('WATCHDOG=1')).length;
    n.started(view);
    await runs[0]!.end();
    n.stopping();
    s.live = false; // what the stopped token manager reports
    for (let i = 0; i < 3; i++) {
      await runs.at(-1)!.end();
      clock.advance(1_000);
    }
    assert.deepEqual(log.lines().filter((l) => l.level === 'warn').map((l) => l.message), []);
    assert.ok(pings() >= 3, 'still pinging while the stop runs');
    n.close();
  });

  it('reads WATCHDOG_USEC and WATCHDOG_PID as sd_watchdog_enabled(3) does', () => {
    assert.equal(watchdogPingMs({ WATCHDOG_USEC: '30000000' }, 7), 15_000);
    assert.equal(watchdogPingMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '7' }, 7), 15_000);
    assert.equal(watchdogPingMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '8' }, 7), undefined, 'meant for another process');
    assert.equal(watchdogPingMs({}, 7), undefined);
    assert.equal(watchdogPingMs({ WATCHDOG_USEC: '0' }, 7), undefined);
    assert.equal(watchdogPingMs({ WATCHDOG_USEC: 'soon' }, 7), undefined);
  });

  it('sends STOPPING=1 on drain and keeps pinging while the drain runs', async () => {
    const clock = new FakeClock();
    const { spawn, runs, fields } = fakeSpawn();
    const n = createSystemdNotifier({ env: { ...ENV, WATCHDOG_USEC: '2000000' }, pid: 42, clock, logger: createCaptureLogger().logger, spawn });
    n.started(state({ ready: true }).view);
    await runs[0]!.end();
    await runs[1]!.end(); // the first ping
    n.stopping();
    assert.deepEqual(fields(2), ['STOPPING=1', 'STATUS=shutting down: draining']);
    await runs[2]!.end();
    n.stopping();
    clock.advance(1_000);
    assert.deepEqual(fields(3), ['WATCHDOG=1'], 'no second STOPPING=1, no status updates, pings go on');
    assert.equal(runs.length, 4);
    n.close();
  });

  it('sends READY=1 without a token after readyWithoutTokenAfterMs, saying so in STATUS=', async () => {
    const clock = new FakeClock();
    const { spawn, runs, fields } = fakeSpawn();
    const n = createSystemdNotifier({ env: ENV, pid: 42, clock, logger: createCaptureLogger().logger, spawn, readyWithoutTokenAfterMs: 60_000 });
    n.started(state({ reason: 'auth server timed out' }).view);
    await runs[0]!.end();
    clock.advance(59_999);
    assert.equal(runs.length, 1);
    clock.advance(1);
    assert.deepEqual(fields(1), ['READY=1', 'STATUS=not ready: auth server timed out (started without a token after 60 s; /readyz answers 503 until one arrives)']);
    n.close();
  });

  it('never throws when systemd-notify fails, logs the first failure as a warning, and goes on', async () => {
    const clock = new FakeClock();
    const { spawn, runs } = fakeSpawn();
    const log = createCaptureLogger();
    let calls = 0;
    const failing = (args: readonly string[], env: NodeJS.ProcessEnv) => {
      calls++;
      if (calls === 2) throw new Error('spawn EAGAIN');
      return spawn(args, env);
    };
    const { s, view } = state();
    const n = createSystemdNotifier({ env: { ...ENV, WATCHDOG_USEC: '2000000' }, pid: 42, clock, logger: log.logger, spawn: failing });
    n.started(view);
    await runs[0]!.end(new Error('systemd-notify exited 1: Failed to notify init system: Connection refused'));
    assert.equal(calls, 2, 'the queued ping went next, and its spawn threw');
    await new Promise((r) => setImmediate(r));
    s.ready = true;
    clock.advance(1_000);
    assert.equal(calls, 3, 'still sending after failures');
    assert.ok(runs.at(-1)!.args.includes('READY=1'));
    const warns = log.lines().filter((l) => l.level === 'warn');
    assert.equal(warns.length, 1, 'one warning for any number of failures');
    assert.match(String(warns[0]!.reason), /Connection refused/);
    n.close();
  });
});
