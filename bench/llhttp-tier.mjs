/**
 * What keeping undici's HTTP parser on V8's baseline compiler costs (docs/design.md, "V8 settings"):
 * CPU per parsed answer of undici's own llhttp (WebAssembly, the SIMD build undici prefers) on a
 * 1 KiB JSON answer like the benchmark's, with V8's defaults (the parser is recompiled by the
 * optimising tier once hot) and with the sidecar's WASM_BASELINE_ONLY_FLAGS set before the module
 * is compiled, as the sidecar sets them before undici's first connection. Fresh processes on the
 * proxy CPU, alternating; medians. Plain .mjs so no loader runs in the measured processes.
 *
 *   npm run build && node bench/llhttp-tier.mjs [--rounds N (5)]
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

if (process.argv[2] === '--child') {
  const { setFlagsFromString } = await import('node:v8');
  if (process.argv[3] === 'baseline') {
    const { WASM_BASELINE_ONLY_FLAGS } = await import(`${ROOT}dist/lib/shared/v8-tuning.js`);
    for (const flag of WASM_BASELINE_ONLY_FLAGS) setFlagsFromString(flag);
  }
  const { TYPE } = require('undici/lib/llhttp/constants.js');
  const mod = new WebAssembly.Module(require('undici/lib/llhttp/llhttp_simd-wasm.js'));
  let bodyBytes = 0;
  const ok = () => 0;
  const { exports: ll } = new WebAssembly.Instance(mod, { env: {
    wasm_on_url: ok, wasm_on_status: ok, wasm_on_message_begin: ok, wasm_on_header_field: ok, wasm_on_header_value: ok,
    wasm_on_headers_complete: ok, wasm_on_body: (_p, _at, len) => { bodyBytes += len; return 0; }, wasm_on_message_complete: ok,
  } });
  const body = JSON.stringify({ data: 'x'.repeat(1000) });
  const answer = Buffer.from(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n` +
    `date: Fri, 27 Nov 2026 13:00:00 GMT\r\nconnection: keep-alive\r\nkeep-alive: timeout=5\r\n\r\n${body}`);
  const parser = ll.llhttp_alloc(TYPE.RESPONSE);
  const at = ll.malloc(4096);
  // As undici does per chunk: copy into wasm memory, then execute.
  const parse = (n) => {
    for (let i = 0; i < n; i++) {
      new Uint8Array(ll.memory.buffer, at, answer.length).set(answer);
      if (ll.llhttp_execute(parser, at, answer.length) !== 0) throw new Error('llhttp: parse error');
    }
  };
  parse(200_000);
  // Time for a recompilation on V8's worker thread to land, then the measured run.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  parse(20_000);
  const n = 400_000;
  const t0 = process.cpuUsage();
  parse(n);
  const t = process.cpuUsage(t0);
  if (bodyBytes !== (200_000 + 20_000 + n) * body.length) throw new Error('llhttp: body bytes do not add up');
  process.stdout.write(String((t.user + t.system) / n));
} else {
  const at = process.argv.indexOf('--rounds');
  const rounds = at >= 0 ? Number(process.argv[at + 1]) : 5;
  if (!Number.isInteger(rounds) || rounds < 1) {
    process.stderr.write('--rounds must be a whole number ≥ 1\n');
    process.exit(2);
  }
  const taskset = (() => { try { execFileSync('taskset', ['-c', '1', 'true']); return true; } catch { return false; } })();
  const run = (mode) => Number(execFileSync(taskset ? 'taskset' : process.execPath,
    [...(taskset ? ['-c', '1', process.execPath] : []), fileURLToPath(import.meta.url), '--child', mode], { encoding: 'utf8' }));
  const samples = { default: [], baseline: [] };
  for (let r = 0; r < rounds; r++) for (const mode of r % 2 ? ['baseline', 'default'] : ['default', 'baseline']) samples[mode].push(run(mode));
  const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const fmt = (a) => `${median(a).toFixed(2)} (${a.map((x) => x.toFixed(2)).join(' ')})`;
  process.stdout.write(`Node ${process.version}, ${rounds} alternating rounds; CPU µs per parsed 1 KiB answer, median (rounds):\n` +
    `  V8's defaults (recompiled when hot): ${fmt(samples.default)}\n` +
    `  WASM_BASELINE_ONLY_FLAGS (baseline tier): ${fmt(samples.baseline)}\n` +
    `  difference: ${(median(samples.baseline) - median(samples.default)).toFixed(2)} µs per answer\n`);
}
