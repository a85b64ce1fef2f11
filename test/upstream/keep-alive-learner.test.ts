import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeepAliveLearner } from '../../src/upstream/keep-alive-learner.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';

function learner(configuredMs = 4000) {
  const applied: number[] = [];
  const log = createCaptureLogger();
  return { l: new KeepAliveLearner(configuredMs, (ms) => applied.push(ms), log.logger), applied, log };
}

describe('keep-alive idle timeout learning', () => {
  it('shrinks the idle timeout below the idle age at which the service reset a reused connection', () => {
    const { l, applied } = learner(4000);
    l.staleAfterIdle(1000);
    assert.equal(l.timeoutMs, 750);
    assert.deepEqual(applied, [750]);
  });

  it('only ever shrinks: a reset after a longer idle time changes nothing', () => {
    const { l, applied } = learner(4000);
    l.staleAfterIdle(1000);
    l.staleAfterIdle(3000);
    l.staleAfterIdle(1001);
    assert.equal(l.timeoutMs, 750);
    l.staleAfterIdle(800);
    assert.equal(l.timeoutMs, 600);
    assert.deepEqual(applied, [750, 600]);
  });

  it('keeps a configured timeout already below what it would learn', () => {
    const { l, applied } = learner(500);
    l.staleAfterIdle(1000);
    assert.equal(l.timeoutMs, 500);
    assert.deepEqual(applied, []);
  });

  it('ignores resets after a very short idle time (not an idle timeout: e.g. a per-connection request cap)', () => {
    const { l, applied } = learner(4000);
    l.staleAfterIdle(5);
    l.staleAfterIdle(199);
    l.staleAfterIdle(Number.NaN);
    assert.equal(l.timeoutMs, 4000);
    assert.deepEqual(applied, []);
  });

  it('says so once at info, later adjustments at debug', () => {
    const { l, log } = learner(4000);
    l.staleAfterIdle(2000);
    l.staleAfterIdle(1000);
    const lines = log.lines().filter((x) => String(x.message).includes('closes idle connections sooner'));
    assert.deepEqual(lines.map((x) => [x.level, x.timeoutMs, x.observedIdleMs]), [['info', 1500, 2000], ['debug', 750, 1000]]);
  });
});
