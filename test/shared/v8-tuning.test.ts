import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { WASM_BASELINE_ONLY_FLAGS, YOUNG_GENERATION_CAP_BYTES, YOUNG_GENERATION_NODE_OPTION } from '../../src/shared/v8-tuning.js';

const TUNING = fileURLToPath(new URL('../../src/shared/v8-tuning.ts', import.meta.url));
const MB = 1024 * 1024;
/**
 * V8 13 (Node 24) now and then reports one page (256 KB) of new space past two semi-spaces of the
 * size given at start: 8.25 MB in about 1 run in 16 here. A page, not a doubling: the cap holds.
 */
const ONE_PAGE = 256 * 1024;

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

/**
 * (module (func (export "f") (param i32) (result i32) (local i32)
 *   (loop (local.set 1 (i32.add (local.get 1) (local.get 0)))
 *         (br_if 0 (local.tee 0 (i32.sub (local.get 0) (i32.const 1)))))
 *   (local.get 1)))
 * in the WebAssembly binary format: a loop that V8 recompiles with its optimising tier once hot.
 */
const LOOP_BODY = [0x01, 0x01, 0x7f, 0x03, 0x40, 0x20, 0x01, 0x20, 0x00, 0x6a, 0x21, 0x01, 0x20, 0x00, 0x41, 0x01, 0x6b, 0x22, 0x00, 0x0d, 0x00, 0x0b, 0x20, 0x01, 0x0b];
const LOOP_MODULE = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x06, 0x01, 0x60, 0x01, 0x7f, 0x01, 0x7f, 0x03, 0x02, 0x01, 0x00,
  0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00, 0x0a, LOOP_BODY.length + 2, 0x01, LOOP_BODY.length, ...LOOP_BODY];

/**
 * Sets `flags` as the sidecar does (after start, through node:v8), then compiles the loop, runs it
 * hot and asks V8 which tier runs it. `--wasm-sync-tier-up` (a V8 testing flag) makes the
 * recompilation happen on the spot instead of on a worker thread some time later, and
 * `--allow-natives-syntax` opens V8's own tier queries.
 */
function wasmTierAfter(flags: readonly string[]): { liftoff: boolean; optimised: boolean; sum: number } {
  const script = `
    const { setFlagsFromString } = await import('node:v8');
    for (const flag of ${JSON.stringify(flags)}) setFlagsFromString(flag);
    const { f } = new WebAssembly.Instance(new WebAssembly.Module(new Uint8Array(${JSON.stringify(LOOP_MODULE)}))).exports;
    let sum = 0;
    for (let i = 0; i < 20000; i++) sum += f(10000);
    process.stdout.write(JSON.stringify({ liftoff: eval('%IsLiftoffFunction(f)'), optimised: eval('%IsTurboFanFunction(f)'), sum }));`;
  return JSON.parse(execFileSync(process.execPath, ['--allow-natives-syntax', '--wasm-sync-tier-up', '--input-type=module', '-e', script], {
    encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' },
  })) as { liftoff: boolean; optimised: boolean; sum: number };
}

describe('V8 tuning for serving', () => {
  it('keeps WebAssembly on the baseline compiler however hot it runs, on every runtime', () => {
    // The control: V8 recompiles the hot loop with its optimising tier.
    const untuned = wasmTierAfter([]);
    assert.equal(untuned.sum, 20_000 * 50_005_000);
    assert.deepEqual({ liftoff: untuned.liftoff, optimised: untuned.optimised }, { liftoff: false, optimised: true });
    // No tiering budget stops it: a loop run this long spends even the largest V8 takes, as
    // llhttp's parser does under load.
    const budget = wasmTierAfter(['--wasm-tiering-budget=2147483647']);
    assert.equal(budget.optimised, true, 'the largest budget was not spent: the loop is too short to show what the flags stop');
    // What the sidecar sets (WASM_BASELINE_ONLY_FLAGS; from Node 24 `--liftoff-only` alone is not enough).
    const tuned = wasmTierAfter(WASM_BASELINE_ONLY_FLAGS);
    assert.equal(tuned.sum, untuned.sum);
    assert.deepEqual({ liftoff: tuned.liftoff, optimised: tuned.optimised }, { liftoff: true, optimised: false });
  });

  it('lets the young generation grow from its start size up to the cap, and no further', () => {
    // The control: this load makes V8 grow the young generation well past the cap on its own
    // (up to 32 MB on Node 22, 128 MB on Node 24).
    const free = largestYoungGeneration(undefined);
    assert.ok(free.largest > YOUNG_GENERATION_CAP_BYTES, `without the cap the young generation reached only ${free.largest / MB} MB: the load does not exercise growth`);
    // As the container image and the systemd unit run it: the cap given at start, the watcher on.
    const capped = largestYoungGeneration(YOUNG_GENERATION_CAP_BYTES, YOUNG_GENERATION_NODE_OPTION);
    assert.ok(capped.largest > capped.start, `the capped young generation never grew from ${capped.start / MB} MB`);
    assert.ok(capped.largest <= YOUNG_GENERATION_CAP_BYTES + ONE_PAGE, `the capped young generation reached ${capped.largest / MB} MB`);
  });

  it('gives the cap at start as the V8 option for two semi-spaces of half the cap each', () => {
    assert.equal(YOUNG_GENERATION_NODE_OPTION, `--max-semi-space-size=${YOUNG_GENERATION_CAP_BYTES / 2 / MB}`);
    const atStart = largestYoungGeneration(undefined, YOUNG_GENERATION_NODE_OPTION);
    assert.ok(atStart.largest <= YOUNG_GENERATION_CAP_BYTES + ONE_PAGE && atStart.largest > atStart.start, `${atStart.largest / MB} MB`);
  });
});
