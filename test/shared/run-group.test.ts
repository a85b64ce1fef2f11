import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { StoppedDuringStartError } from '../../src/shared/errors.js';
import type { Part } from '../../src/shared/part.js';
import { RunGroup } from '../../src/shared/run-group.js';

/** Parts that write what happens to them into one shared record. */
function recorder() {
  const events: string[] = [];
  const warnings: string[] = [];
  const group = new RunGroup({ warn: (message, fields) => warnings.push(`${message}: ${String(fields.reason)}`) });
  const part = (name: string, opts: { fail?: boolean; gate?: Promise<void>; stop?: boolean } = {}): Part => ({
    name,
    async start() {
      events.push(`start ${name}`);
      if (opts.gate) await opts.gate;
      if (opts.fail) throw new Error(`${name} failed`);
      events.push(`started ${name}`);
    },
    ...(opts.stop === false ? {} : { stop: () => { events.push(`stop ${name}`); } }),
  });
  return { events, warnings, group, part };
}

describe('RunGroup.run: a start sequence of parts', () => {
  it('starts the parts in order, each after the one before has settled, and stops them in reverse', async () => {
    const { events, group, part } = recorder();
    await group.run([part('a'), part('b', { stop: false }), part('c')]);
    assert.deepEqual(events, ['start a', 'started a', 'start b', 'started b', 'start c', 'started c']);
    await group.stopAll();
    assert.deepEqual(events.slice(6), ['stop c', 'stop a'], 'reverse order; a part without stop is skipped');
    await group.stopAll();
    assert.equal(events.length, 8, 'stops run once');
  });

  it('a failing part ends the sequence with its error; stopping then stops only the parts already started', async () => {
    const { events, group, part } = recorder();
    await assert.rejects(group.run([part('a'), part('b'), part('c', { fail: true }), part('d')]), /c failed/);
    assert.ok(!events.includes('start d'), 'nothing after the failing part starts');
    await group.stopAll();
    assert.deepEqual(events.filter((e) => e.startsWith('stop')), ['stop b', 'stop a'], 'the failed part holds nothing to stop');
  });

  it('a stop requested while a part starts lets that part finish and registers its stop, then gives up before the next', async () => {
    const { events, group, part } = recorder();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const run = group.run([part('a'), part('b', { gate }), part('c')]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(events, ['start a', 'started a', 'start b']);
    group.requestStop();
    assert.equal(group.signal.aborted, true, 'a part waiting on something long is told');
    open();
    await assert.rejects(run, StoppedDuringStartError);
    assert.ok(!events.includes('start c'));
    await group.stopAll();
    assert.deepEqual(events.filter((e) => e.startsWith('stop')), ['stop b', 'stop a'], 'the part that was starting is stopped too');
  });

  it('a part failing because the stop made it give up reports the stop, not its own error', async () => {
    const { group, part } = recorder();
    let fail!: () => void;
    const gate = new Promise<void>((_, reject) => (fail = () => reject(new Error('aborted'))));
    const run = group.run([part('a', { gate })]);
    group.requestStop();
    fail();
    await assert.rejects(run, StoppedDuringStartError);
  });

  it('a stop requested before the run starts nothing', async () => {
    const { events, group, part } = recorder();
    group.requestStop();
    await assert.rejects(group.run([part('a')]), StoppedDuringStartError);
    assert.deepEqual(events, []);
  });

  it('a failing stop is logged and the stops before it still run', async () => {
    const { events, warnings, group, part } = recorder();
    await group.run([part('a'), { name: 'b', start() {}, stop() { throw new Error('b would not stop'); } }]);
    await group.stopAll();
    assert.deepEqual(events.filter((e) => e.startsWith('stop')), ['stop a']);
    assert.deepEqual(warnings, ['error while stopping: b would not stop']);
  });
});
