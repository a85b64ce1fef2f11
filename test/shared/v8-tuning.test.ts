import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const TUNING = fileURLToPath(new URL('../../src/shared/v8-tuning.ts', import.meta.url));

/**
 * Runs a fresh V8 that keeps a share of what it allocates alive for a while (as in-flight
 * requests do), yielding to the event loop between batches as a server does, and reports the
 * young generation's largest size. With `cap` the tuning module caps it.
 */
function largestYoungGeneration(cap: number | undefined): { largest: number; start: number } {
  const script = `
    const { capYoungGeneration, newSpaceBytes } = await import(${JSON.stringify(TUNING)});
    const start = newSpaceBytes();
    ${cap === undefined ? '' : `capYoungGeneration(${cap});`}
    let largest = start;
    let keep = [];
    for (let batch = 0; batch < 400; batch++) {
      for (let i = 0; i < 5000; i++) {
        keep.push({ i, data: [i, String(i)] });
        if (keep.length > 40000) keep = [];
      }
      largest = Math.max(largest, newSpaceBytes());
      await new Promise((resolve) => setImmediate(resolve));
    }
    process.stdout.write(JSON.stringify({ largest, start }));`;
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' })) as { largest: number; start: number };
}

describe('V8 tuning for serving', () => {
  it('lets the young generation grow from its start size up to the cap, and no further', () => {
    const MB = 1024 * 1024;
    const free = largestYoungGeneration(undefined);
    // The control: this load makes V8 grow the young generation well past the cap on its own.
    assert.ok(free.largest > 8 * MB, `without the cap the young generation reached only ${free.largest / MB} MB: the load does not exercise growth`);
    const capped = largestYoungGeneration(8 * MB);
    assert.ok(capped.largest > capped.start, `the capped young generation never grew from ${capped.start / MB} MB`);
    // Each batch allocates less than one semi-space, so no doubling lands between two checks.
    assert.ok(capped.largest <= 8 * MB, `the capped young generation reached ${capped.largest / MB} MB`);
  });
});
