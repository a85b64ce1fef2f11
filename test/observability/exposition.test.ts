import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { PerformanceObserver } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { registerSidecarMetrics } from '../../src/observability/metrics-table.js';
import { createRegistry } from '../../src/observability/metrics.js';
import { CREDENTIALS, send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';

/**
 * What a scraper sees on /metrics, pinned: every family's name, TYPE and HELP in order, and each
 * sample's name and label names, with the label values of the sidecar's own metrics (alerts and
 * dashboards select on them). Values are left out, and so are the label values of the Prometheus
 * client's default process metrics (heap space names, GC kinds and the Node version change with
 * the runtime), except histogram bucket bounds. The golden file was written from the exposition of
 * prom-client 15.1.3, so a change of client library (or of its version) that renames, retypes or
 * relabels anything a dashboard or alert reads fails here.
 * B2B_WRITE_EXPOSITION=1 rewrites test/fixtures/metrics-exposition.txt after a deliberate change.
 */
const GOLDEN = new URL('../fixtures/metrics-exposition.txt', import.meta.url);
const SIDECAR = 'b2b_sidecar_';
const RUNTIME_LABELS = new Set(['version', 'node']);

/**
 * One exposition with values dropped and runtime-dependent label values masked; each resulting line
 * once, where it first appeared (how many GC kinds or heap spaces have series depends on the run).
 */
export function normaliseExposition(text: string): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    let normal = line;
    if (!line.startsWith('#')) {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+\S+(\s+\S+)?$/.exec(line);
      assert.ok(m, `not a sample line: ${line}`);
      const [, name, labels] = m;
      const own = name!.startsWith(SIDECAR);
      const pairs = [...(labels ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => {
        const keep = k === 'le' || (own && !(name === `${SIDECAR}build_info` && RUNTIME_LABELS.has(k!)));
        return `${k}=${keep ? `"${v}"` : '*'}`;
      });
      normal = pairs.length > 0 ? `${name}{${pairs.join(',')}}` : name!;
    }
    if (seen.has(normal)) continue;
    seen.add(normal);
    out.push(normal);
  }
  return out;
}

/** Makes garbage until V8 reports a collection, so the default GC histogram has a sample (and its labels). */
async function someGarbage(): Promise<void> {
  let collected = false;
  const observer = new PerformanceObserver(() => void (collected = true));
  observer.observe({ entryTypes: ['gc'] });
  try {
    for (let round = 0; round < 200 && !collected; round++) {
      let keep: unknown[] = [];
      for (let i = 0; i < 100_000; i++) {
        keep.push({ i });
        if (keep.length > 1000) keep = [];
      }
      // GC entries are delivered after the turn that ran the collection.
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.ok(collected, 'V8 reported no garbage collection');
  } finally {
    observer.disconnect();
  }
}

async function currentExposition(): Promise<string> {
  const sim = await startSimulator();
  const s = await startSidecar({ baseUrl: sim.baseUrl });
  try {
    await waitReady(s);
    const answer = await send(s.port, { path: `/pub/b2b/v1/objects/${CREDENTIALS.rkObjectId}` });
    assert.equal(answer.status, 200);
    await someGarbage();
    const scrape = await send(s.adminPort, { path: '/metrics' });
    assert.equal(scrape.status, 200);
    assert.match(String(scrape.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    // Every family the registry can hold, translation metrics included (registered only with
    // localization.watch in a running sidecar).
    const full = createRegistry();
    registerSidecarMetrics(full);
    return [
      '## /metrics of a running sidecar after one proxied GET',
      ...normaliseExposition(scrape.body.toString('utf8')),
      '## every family of a full registry (translation metrics included), before any sample',
      ...normaliseExposition(await full.metrics()),
      '',
    ].join('\n');
  } finally {
    await s.stop();
    await sim.stop();
  }
}

describe('the /metrics exposition', () => {
  it('keeps every metric name, type, help text and label a dashboard or alert can read', async () => {
    const current = await currentExposition();
    if (process.env['B2B_WRITE_EXPOSITION'] === '1') writeFileSync(GOLDEN, current);
    assert.equal(current, readFileSync(GOLDEN, 'utf8'));
  });

  it('normalises values and runtime label values away, and keeps the sidecar label values and bucket bounds', () => {
    const lines = normaliseExposition([
      '# HELP b2b_sidecar_build_info Always 1.',
      '# TYPE b2b_sidecar_build_info gauge',
      'b2b_sidecar_build_info{version="1.2.3",node="v24.21.0"} 1',
      'b2b_sidecar_token_refresh_total{result="success"} 4',
      'nodejs_heap_space_size_total_bytes{space="new"} 1048576',
      'nodejs_heap_space_size_total_bytes{space="old"} 7340032',
      'nodejs_gc_duration_seconds_bucket{le="0.001",kind="minor"} 3',
      'nodejs_gc_duration_seconds_bucket{le="0.01",kind="minor"} 3',
      'nodejs_gc_duration_seconds_bucket{le="0.001",kind="major"} 1',
      'nodejs_gc_duration_seconds_bucket{le="0.01",kind="major"} 1',
    ].join('\n'));
    assert.deepEqual(lines, [
      '# HELP b2b_sidecar_build_info Always 1.',
      '# TYPE b2b_sidecar_build_info gauge',
      'b2b_sidecar_build_info{version=*,node=*}',
      'b2b_sidecar_token_refresh_total{result="success"}',
      'nodejs_heap_space_size_total_bytes{space=*}',
      'nodejs_gc_duration_seconds_bucket{le="0.001",kind=*}',
      'nodejs_gc_duration_seconds_bucket{le="0.01",kind=*}',
    ]);
  });
});
