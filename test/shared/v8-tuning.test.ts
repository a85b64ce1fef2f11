import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { YOUNG_GENERATION_CAP_BYTES, YOUNG_GENERATION_NODE_OPTION } from '../../src/shared/v8-tuning.js';

const TUNING = fileURLToPath(new URL('../../src/shared/v8-tuning.ts', import.meta.url));
const MB = 1024 * 1024;

/**
 * Runs a fresh V8 that keeps a share of what it allocates alive for a while (as in-flight
 * requests do), yielding to the event loop between batches as a server does, and reports the
 * young generation's largest size. With `cap` the tuning module caps it.
 */
function largestYoungGeneration(cap: number | undefined, nodeOptions = ''): { largest: number; start: number } {
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
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: nodeOptions },
  })) as { largest: number; start: number };
}

describe('V8 tuning for serving', () => {
  it('lets the young generation grow from its start size up to the cap, and no further', () => {
    // The control: this load makes V8 grow the young generation well past the cap on its own
    // (up to 32 MB on Node 22, 128 MB on Node 24).
    const free = largestYoungGeneration(undefined);
    assert.ok(free.largest > YOUNG_GENERATION_CAP_BYTES, `without the cap the young generation reached only ${free.largest / MB} MB: the load does not exercise growth`);
    // As the container image and the systemd unit run it: the cap given at start, the watcher on.
    const capped = largestYoungGeneration(YOUNG_GENERATION_CAP_BYTES, YOUNG_GENERATION_NODE_OPTION);
    assert.ok(capped.largest > capped.start, `the capped young generation never grew from ${capped.start / MB} MB`);
    assert.ok(capped.largest <= YOUNG_GENERATION_CAP_BYTES, `the capped young generation reached ${capped.largest / MB} MB`);
  });

  it('gives the cap at start as the V8 option for two semi-spaces of half the cap each', () => {
    assert.equal(YOUNG_GENERATION_NODE_OPTION, `--max-semi-space-size=${YOUNG_GENERATION_CAP_BYTES / 2 / MB}`);
    const atStart = largestYoungGeneration(undefined, YOUNG_GENERATION_NODE_OPTION);
    assert.ok(atStart.largest <= YOUNG_GENERATION_CAP_BYTES && atStart.largest > atStart.start, `${atStart.largest / MB} MB`);
  });
});
