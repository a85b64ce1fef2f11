import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SidecarStatus } from '../../src/observability/status.js';
import { shapeOf } from '../../src/observability/warnings-log.js';
import { WARNINGS_CHECK_MS, warningsLogPart } from '../../src/parts/warnings-log.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { send, startSidecar, waitReady } from '../helpers/stack.js';
import { startVendor, VENDORS, type Rule } from '../helpers/vendors.js';

/**
 * The warnings log is rendered from the one status: each warning of `status().warnings` is logged
 * once as it appears and once as it clears, on the injected clock; whole sidecars show the log
 * saying what /readyz says.
 */
const SUPERSEDED = (n: number, at: string) => `tokens this process still holds are rejected long before they expire (${n} in 10 min, the last at ${at}): another process probably obtains tokens with the same ApiKey`;
const STUCK = (s: number) => `a credential file re-read has been running for ${s} s (a hung file system?); the current credentials stay in use`;

function scripted() {
  const now: Pick<SidecarStatus, 'state' | 'warnings'> = { state: 'ready', warnings: [] };
  return { now, status: () => now as SidecarStatus };
}

function logged(log: ReturnType<typeof createCaptureLogger>) {
  return log.lines().map((l) => `${String(l.level)} ${String(l.message)}: ${String(l.warning)}`);
}

describe('the warnings log, fed from the status', () => {
  it('logs a warning once when it appears and once when it clears, on the injected clock', () => {
    const clock = new FakeClock();
    const log = createCaptureLogger();
    const s = scripted();
    const part = warningsLogPart({ clock, logger: log.logger }, s.status);
    part.start();
    s.now.warnings = [SUPERSEDED(3, '2026-11-22T12:00:01.000Z')];
    clock.advance(WARNINGS_CHECK_MS - 1);
    assert.deepEqual(logged(log), [], 'not before the next check');
    clock.advance(1);
    assert.deepEqual(logged(log), [`warn warning raised: ${SUPERSEDED(3, '2026-11-22T12:00:01.000Z')}`]);
    // The same warning restating its count and time is the same warning.
    s.now.warnings = [SUPERSEDED(4, '2026-11-22T12:00:07.000Z'), STUCK(5)];
    clock.advance(WARNINGS_CHECK_MS);
    s.now.warnings = [SUPERSEDED(5, '2026-11-22T12:00:12.000Z'), STUCK(10)];
    clock.advance(WARNINGS_CHECK_MS * 3);
    assert.deepEqual(logged(log).slice(1), [`warn warning raised: ${STUCK(5)}`]);
    s.now.warnings = [STUCK(25)];
    clock.advance(WARNINGS_CHECK_MS);
    assert.deepEqual(logged(log).slice(2), [`info warning cleared: ${SUPERSEDED(5, '2026-11-22T12:00:12.000Z')}`], 'cleared with the text last seen');
    s.now.warnings = [];
    clock.advance(WARNINGS_CHECK_MS);
    assert.deepEqual(logged(log).slice(3), [`info warning cleared: ${STUCK(25)}`]);
    clock.advance(WARNINGS_CHECK_MS * 10);
    assert.equal(log.lines().length, 4, 'nothing more while nothing changes');
    part.stop?.();
  });

  it('says nothing once a drain begins (the status then reports only the shutdown) or once stopped', () => {
    const clock = new FakeClock();
    const log = createCaptureLogger();
    const s = scripted();
    const part = warningsLogPart({ clock, logger: log.logger }, s.status);
    part.start();
    s.now.warnings = [STUCK(5)];
    clock.advance(WARNINGS_CHECK_MS);
    assert.equal(log.lines().length, 1);
    s.now.state = 'shutting down';
    s.now.warnings = [];
    clock.advance(WARNINGS_CHECK_MS * 3);
    assert.equal(log.lines().length, 1, 'a drain is not a warning clearing');
    part.stop?.();
    const stopped = warningsLogPart({ clock, logger: log.logger }, s.status);
    stopped.start();
    stopped.stop?.();
    s.now.state = 'ready';
    s.now.warnings = [STUCK(1)];
    clock.advance(WARNINGS_CHECK_MS * 3);
    assert.equal(log.lines().length, 1, 'no check after stop');
  });

  it('a status that throws is logged and the checks go on (a throw from a bare timer would end the process)', () => {
    const clock = new FakeClock();
    const log = createCaptureLogger();
    const s = scripted();
    let broken = true;
    const part = warningsLogPart({ clock, logger: log.logger }, () => {
      if (broken) throw new Error('token view unavailable');
      return s.status();
    });
    part.start();
    clock.advance(WARNINGS_CHECK_MS);
    assert.deepEqual(logged(log), ['error the warnings log could not read the status: undefined']);
    broken = false;
    s.now.warnings = [STUCK(5)];
    clock.advance(WARNINGS_CHECK_MS);
    assert.deepEqual(logged(log).slice(1), [`warn warning raised: ${STUCK(5)}`]);
    part.stop?.();
  });

  it('recognises a warning by its text without numbers and times', () => {
    assert.equal(shapeOf(SUPERSEDED(3, '2026-11-22T12:00:01.000Z')), shapeOf(SUPERSEDED(12, '2026-11-23T08:10:59.123Z')));
    assert.equal(shapeOf(STUCK(5)), shapeOf(STUCK(125)));
    assert.notEqual(shapeOf(STUCK(5)), shapeOf(SUPERSEDED(3, '2026-11-22T12:00:01.000Z')));
  });

  it('a running sidecar logs the attach-suspect warning /readyz shows, once, and its clearing at the first success', async (t) => {
    let fixed = false;
    const rule: Rule = (p, req) => (fixed && p.issued(p.header('Authorization')?.replace(/^Bearer /, '')) ? undefined : VENDORS.notFound(p, req));
    const vendor = await startVendor(rule);
    t.after(() => vendor.close());
    const clock = new FakeClock();
    const s = await startSidecar({ baseUrl: vendor.url, clock });
    t.after(() => s.stop());
    await waitReady(s);
    const raised = () => s.log.lines().filter((l) => l.message === 'warning raised').map((l) => l.warning);
    const cleared = () => s.log.lines().filter((l) => l.message === 'warning cleared').map((l) => l.warning);
    const paths = ['/pub/b2b/v1/objects/obj-42', '/pub/b2b/v1/objects/obj-43'];
    for (let i = 0; i < 10; i++) await send(s.port, { path: paths[i % 2] });
    const shown = (await send(s.adminPort, { path: '/readyz' })).json<{ warnings?: string[] }>().warnings ?? [];
    assert.equal(shown.length, 1, 'attach suspect');
    assert.deepEqual(raised(), [], 'logged at the next check, not before');
    clock.advance(WARNINGS_CHECK_MS);
    assert.deepEqual(raised(), shown, 'the log says what /readyz says');
    for (let i = 0; i < 3; i++) await send(s.port, { path: paths[i % 2] });
    clock.advance(WARNINGS_CHECK_MS * 2);
    assert.deepEqual(raised(), shown, 'once');
    fixed = true;
    assert.equal((await send(s.port, { path: paths[0] })).status, 200);
    assert.deepEqual(cleared(), []);
    clock.advance(WARNINGS_CHECK_MS);
    assert.deepEqual(cleared(), shown);
    assert.deepEqual(raised(), shown, 'not raised again');
  });
});
