import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/**
 * The young generation's ceiling while serving: two semi-spaces of 4 MB. V8's default lets it
 * double up to 2 × 16 MB under load (+12 MB of peak RSS, findings 11 and 17); held at its start
 * size (1 MB) it cost ~4 µs of scavenges per proxied request, about a tenth of the CPU (finding
 * 24). At 8 MB a request's objects mostly die young and the scavenge share falls by a third.
 */
export const YOUNG_GENERATION_CAP_BYTES = 8 * 1024 * 1024;

/**
 * The same cap as a start option: `--max-semi-space-size` (in MB, per semi-space) is the one V8
 * heap flag Node accepts in NODE_OPTIONS and, from Node 24, it leaves the built-in code cache and
 * ours in use. Given at start it holds on every runtime (V8 13 now and then reports one 256 KB
 * page more); the watcher below only approximates it (V8 13 and later grow the young generation
 * by pages past the target, and V8 14 sizes it dynamically, ignoring the growth factor), and V8's
 * own default on Node 24 lets it reach 128 MB.
 * The container image and the systemd unit set it; any other launch gets the watcher alone.
 */
export const YOUNG_GENERATION_NODE_OPTION = `--max-semi-space-size=${YOUNG_GENERATION_CAP_BYTES / 2 / 1024 / 1024}`;

/**
 * Keeps WebAssembly on V8's baseline compiler (Liftoff). undici parses HTTP/1.1 with llhttp
 * compiled to WebAssembly, and once its parser function has run long enough V8 recompiles it with
 * its optimising compiler on a worker thread: a ~20 MB resident spike and ~10 MB kept for good in
 * that thread's malloc arena, to save ~0.5 µs per parsed answer, under 1 % of a proxied request
 * (bench/results/findings.md 9; bench/HISTORY.md, Node 24). A module takes these when it is
 * compiled: undici compiles llhttp at its first connection, after they are set.
 * - `--liftoff-only` was enough up to V8 12 (Node 22). From V8 13 (Node 24), set after start, it
 *   no longer stops the recompilation, and neither does any tiering budget: llhttp's parser is one
 *   large function whose loop spends even the largest budget V8 takes under load.
 * - `--no-wasm-dynamic-tiering` with `--no-wasm-tier-up`: what V8's own Liftoff-only tests set.
 *   Together they create modules that never tier up; either alone does not (without dynamic
 *   tiering but with tier-up, V8 recompiles eagerly).
 * test/shared/v8-tuning.test.ts shows it on each runtime with V8's own tier query.
 */
export const WASM_BASELINE_ONLY_FLAGS = ['--liftoff-only', '--no-wasm-dynamic-tiering', '--no-wasm-tier-up'] as const;

/**
 * Old-space growth between full collections, as a percentage of what survived the last one.
 * V8's own factor for a small heap let old space reach 2.5× its live size under POST load, which
 * set the peak RSS (finding 21); 20 % (V8 still grows by at least a few MB at a time) took
 * ~14 MB off the peak with no measurable CPU cost for GETs and small POSTs (finding 24). Uploads
 * of 64 KiB pay for it: their buffers count toward the limit, and mark-compacts take 15–25 % of
 * their CPU; 100 % would keep the peak but make the replay copy most of that cost (finding 28).
 */
export const OLD_SPACE_GROWTH_PERCENT = 20;

/**
 * V8 settings for a long-running proxy (bench/results/findings.md, bench/HISTORY.md), applied once the command's
 * modules are loaded: after any V8 flag change Node rejects the code cache of its own built-in
 * modules, which then load ~3× slower. That happens for flags given on the command line or in
 * NODE_OPTIONS too, which is why these are not set there — and why the young generation is capped
 * by watching it rather than with `--max-semi-space-size`, which V8 reads only at start.
 * - WASM_BASELINE_ONLY_FLAGS: undici's llhttp stays on V8's baseline compiler.
 * - `--heap-growing-percent`: read each time V8 sets the next full collection's threshold.
 * - the young-generation cap: see capYoungGeneration.
 */
export function tuneV8ForServing(): void {
  for (const flag of WASM_BASELINE_ONLY_FLAGS) setFlagsFromString(flag);
  setFlagsFromString(`--heap-growing-percent=${OLD_SPACE_GROWTH_PERCENT}`);
  capYoungGeneration(YOUNG_GENERATION_CAP_BYTES);
}

/**
 * Lets the young generation grow (V8 doubles it after a scavenge that kept much) until it reaches
 * `capBytes`, then stops its growth; once V8 shrinks it again (an idle process), growth is allowed
 * again. `--semi-space-growth-factor` is read at every scavenge, so switching it after each
 * collection (a `gc` performance entry: a few per second under load) holds the size near the cap
 * (exactly on V8 12, Node 22; a few pages past it on V8 13; V8 14 ignores the factor): the
 * cap is YOUNG_GENERATION_NODE_OPTION at start, and with it this watcher has nothing to do.
 * Best effort: the entries arrive after the event-loop turn, so a turn that allocates more than two
 * semi-spaces can grow it one or more doublings past the cap, where it then stays until V8 shrinks
 * it (an idle process). The proxy's turns allocate far less (bench/memory.ts: 8 MB after GET and
 * POST load at 50 connections). Returns a function that stops watching.
 */
export function capYoungGeneration(capBytes: number): () => void {
  let capped = false;
  const check = (): void => {
    const atCap = newSpaceBytes() >= capBytes;
    if (atCap === capped) return;
    capped = atCap;
    setFlagsFromString(atCap ? '--semi-space-growth-factor=1' : '--semi-space-growth-factor=2');
  };
  check();
  const observer = new PerformanceObserver(check);
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}

/** The young generation's size: both semi-spaces. */
export function newSpaceBytes(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}
