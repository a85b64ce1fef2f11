import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { hasCommand } from './proc.js';
import { LOAD_CPU, spawnManaged } from './spawn.js';

export const LOAD_TOOL: 'wrk' | 'autocannon' = hasCommand('wrk') ? 'wrk' : 'autocannon';

export interface LoadSpec {
  url: string;
  connections: number;
  seconds: number;
  method?: 'GET' | 'POST';
  /** POST body size (bytes of 'x'). */
  bodyBytes?: number;
  /**
   * Send the body with `Transfer-Encoding: chunked` in chunks of this size instead of a
   * Content-Length (wrk only: the request is built by hand, as wrk.format always adds a length).
   */
  chunkBytes?: number;
  headers?: Record<string, string>;
  /** Alternate GET `url` and POST `postUrl` (bodyBytes) requests (soak). wrk only; autocannon sends GETs. */
  mixPostUrl?: string;
  /** Count statuses ≥ 400 by code and keep the first such body (wrk: costs a little load-generator CPU). */
  captureFailures?: boolean;
}

export interface LoadResult {
  tool: 'wrk' | 'autocannon';
  requests: number;
  seconds: number;
  rps: number;
  /** Socket errors and timeouts. */
  socketErrors: number;
  /** Responses with status ≥ 400. */
  badStatus: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /** With captureFailures: statuses ≥ 400 by code, and the first such body (truncated). */
  failedStatuses?: Record<string, number>;
  firstFailedBody?: string;
}

let scriptSeq = 0;

/** One bounded load run from the load CPU; wrk when installed, else autocannon. */
export async function runLoad(spec: LoadSpec, workDir: string): Promise<LoadResult> {
  return LOAD_TOOL === 'wrk' ? runWrk(spec, workDir) : runAutocannon(spec);
}

function luaString(s: string): string {
  return JSON.stringify(s); // JSON string escapes are valid Lua for the ASCII we send
}

async function runWrk(spec: LoadSpec, workDir: string): Promise<LoadResult> {
  const method = spec.method ?? 'GET';
  const lines = [`wrk.method = ${luaString(method)}`];
  for (const [k, v] of Object.entries(spec.headers ?? {})) lines.push(`wrk.headers[${luaString(k)}] = ${luaString(v)}`);
  if (spec.chunkBytes) {
    if (LOAD_TOOL !== 'wrk') throw new Error('chunked request bodies need wrk');
    if (spec.captureFailures || spec.mixPostUrl) throw new Error('chunkBytes cannot be combined with captureFailures or mixPostUrl');
    const u = new URL(spec.url);
    const total = spec.bodyBytes ?? spec.chunkBytes;
    const extra = Object.entries(spec.headers ?? {}).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    lines.push(
      'local parts = {}',
      `local remaining = ${total}`,
      'while remaining > 0 do',
      `  local n = math.min(${spec.chunkBytes}, remaining)`,
      '  table.insert(parts, string.format("%x\\r\\n", n) .. string.rep("x", n) .. "\\r\\n")',
      '  remaining = remaining - n',
      'end',
      'local raw',
      'init = function(args)',
      `  raw = ${luaString(`${method} ${u.pathname}${u.search} HTTP/1.1\r\n`)} .. "Host: " .. wrk.headers["Host"] .. "\\r\\n" ..`,
      `    ${luaString(`${extra}Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n`)} .. table.concat(parts) .. "0\\r\\n\\r\\n"`,
      'end',
      'request = function() return raw end',
    );
  } else if (spec.bodyBytes && !spec.mixPostUrl) {
    // Not with mixPostUrl: wrk.format() falls back to wrk.body, so every GET would carry the body too.
    lines.push(`wrk.body = string.rep("x", ${spec.bodyBytes})`, 'wrk.headers["Content-Type"] = "application/octet-stream"');
  }
  if (spec.mixPostUrl) {
    const getPath = new URL(spec.url).pathname + new URL(spec.url).search;
    const postPath = new URL(spec.mixPostUrl).pathname;
    lines.push(
      'local n = 0',
      `local body = string.rep("x", ${spec.bodyBytes ?? 4096})`,
      'request = function()',
      '  n = n + 1',
      `  if n % 2 == 0 then return wrk.format("POST", ${luaString(postPath)}, {["Content-Type"] = "application/octet-stream"}, body) end`,
      `  return wrk.format("GET", ${luaString(getPath)}, nil, nil)`,
      'end',
    );
  }
  if (spec.captureFailures) {
    lines.push(
      'local threads = {}',
      'setup = function(thread) table.insert(threads, thread) end',
      'init = function(args) failed = {}; firstbody = "" end',
      'response = function(status, headers, body)',
      '  if status >= 400 then',
      '    failed[tostring(status)] = (failed[tostring(status)] or 0) + 1',
      '    if firstbody == "" and body then firstbody = string.sub(body, 1, 300) end',
      '  end',
      'end',
      'local function q(s) return (string.gsub(s, "[^%w %.,:;!%?%-_/()]", " ")) end',
      'local function report()',
      '  local parts = {}',
      '  local body = ""',
      '  for _, t in ipairs(threads) do',
      '    for k, v in pairs(t:get("failed") or {}) do table.insert(parts, string.format("\\"%s\\":%d", k, v)) end',
      '    if body == "" then body = t:get("firstbody") or "" end',
      '  end',
      '  io.write(string.format("\\nBENCHFAIL {\\"statuses\\":{%s},\\"body\\":\\"%s\\"}\\n", table.concat(parts, ","), q(body)))',
      'end',
    );
  } else {
    lines.push('local function report() end');
  }
  lines.push(
    'done = function(summary, latency, requests)',
    '  report()',
    '  local e = summary.errors',
    '  io.write(string.format("\\nBENCHJSON {\\"requests\\":%d,\\"duration_us\\":%d,\\"connect\\":%d,\\"read\\":%d,\\"write\\":%d,\\"status\\":%d,\\"timeout\\":%d,\\"p50\\":%d,\\"p90\\":%d,\\"p99\\":%d,\\"max\\":%d}\\n",',
    '    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,',
    '    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max))',
    'end',
  );
  const script = join(workDir, `load-${process.pid}-${++scriptSeq}.lua`);
  writeFileSync(script, lines.join('\n') + '\n');
  const args = ['-t1', `-c${spec.connections}`, `-d${spec.seconds}s`, '--timeout', '5s', '-s', script, spec.url];
  const wrk = spawnManaged('wrk', 'wrk', args, { cpu: LOAD_CPU });
  const line = await wrk.waitForLine((l) => l.startsWith('BENCHJSON '), (spec.seconds + 30) * 1000);
  await wrk.exited;
  const r = JSON.parse(line.slice('BENCHJSON '.length)) as Record<string, number>;
  const seconds = r['duration_us']! / 1e6;
  const failLine = wrk.lines.find((l) => l.startsWith('BENCHFAIL '));
  const fail = failLine ? (JSON.parse(failLine.slice('BENCHFAIL '.length)) as { statuses: Record<string, number>; body: string }) : undefined;
  return {
    ...(fail ? { failedStatuses: fail.statuses, firstFailedBody: fail.body } : {}),
    tool: 'wrk',
    requests: r['requests']!,
    seconds,
    rps: r['requests']! / seconds,
    socketErrors: r['connect']! + r['read']! + r['write']! + r['timeout']!,
    badStatus: r['status']!,
    p50Ms: r['p50']! / 1000,
    p90Ms: r['p90']! / 1000,
    p99Ms: r['p99']! / 1000,
    maxMs: r['max']! / 1000,
  };
}

async function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const bin = createRequire(import.meta.url).resolve('autocannon/autocannon.js');
  const args = [bin, '-j', '-n', '-c', String(spec.connections), '-d', String(spec.seconds), '-t', '5', '-m', spec.method ?? 'GET'];
  for (const [k, v] of Object.entries(spec.headers ?? {})) args.push('-H', `${k}=${v}`);
  if (spec.bodyBytes) args.push('-b', 'x'.repeat(spec.bodyBytes), '-H', 'content-type=application/octet-stream');
  args.push(spec.url);
  const ac = spawnManaged('autocannon', process.execPath, args, { cpu: LOAD_CPU });
  const line = await ac.waitForLine((l) => l.startsWith('{') && l.includes('"latency"'), (spec.seconds + 30) * 1000);
  await ac.exited;
  const r = JSON.parse(line) as {
    requests: { total: number }; duration: number; errors: number; timeouts: number; non2xx: number;
    latency: { p50: number; p90: number; p99: number; max: number };
    statusCodeStats?: Record<string, { count: number }>;
  };
  let badStatus = r.non2xx;
  if (r.statusCodeStats) {
    badStatus = 0;
    for (const [code, s] of Object.entries(r.statusCodeStats)) if (Number(code) >= 400) badStatus += s.count;
  }
  return {
    tool: 'autocannon',
    requests: r.requests.total,
    seconds: r.duration,
    rps: r.requests.total / r.duration,
    socketErrors: r.errors,
    badStatus,
    p50Ms: r.latency.p50,
    p90Ms: r.latency.p90,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
  };
}
