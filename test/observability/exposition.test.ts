import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { Registry } from '../../src/observability/prom-client-core.js';
import { createRegistry, registerSidecarMetrics } from '../../src/observability/metrics.js';
import { CREDENTIALS, send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';

/**
 * What a scraper sees on /metrics, pinned: every family's name, TYPE and HELP in order; each
 * sample of the sidecar's own metrics with its label names and values (alerts and dashboards
 * select on them), values left out; and every family's label names and bucket bounds as the
 * registry declares them. The samples of the Prometheus client's default process metrics are left
 * out: which exist at a given moment (GC kinds, heap spaces, active libuv requests) and their
 * label values change with the run and the runtime. The golden file was written from the exposition of
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
      if (!own) continue;
      const pairs = [...(labels ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => {
        const keep = !(name === `${SIDECAR}build_info` && RUNTIME_LABELS.has(k!));
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

async function currentExposition(): Promise<string> {
  const sim = await startSimulator();
  const s = await startSidecar({ baseUrl: sim.baseUrl });
  try {
    await waitReady(s);
    const answer = await send(s.port, { path: `/pub/b2b/v1/objects/${CREDENTIALS.rkObjectId}` });
    assert.equal(answer.status, 200);
    const scrape = await send(s.adminPort, { path: '/metrics' });
    const globalRegistry = (Registry as unknown as { globalRegistry: InstanceType<typeof Registry> }).globalRegistry;
    assert.deepEqual(globalRegistry.getMetricsAsArray().map((m) => (m as unknown as { name: string }).name), [], 'nothing lands in the client\'s global registry');
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
      '## label names and bucket bounds of every family, as registered',
      ...full.getMetricsAsArray().map((metric) => {
        const { name, labelNames, upperBounds } = metric as unknown as { name: string; labelNames: string[]; upperBounds?: number[] };
        return `${name} labels=${labelNames.join(',')}${upperBounds ? ` buckets=${upperBounds.join(',')}` : ''}`;
      }),
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

  it('has one client library, used through its own registries: no prom-client, no value import of the package entry', () => {
    const src = fileURLToPath(new URL('../../src/', import.meta.url));
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => /\.ts$/.test(f));
    for (const file of files) {
      const text = readFileSync(join(src, file), 'utf8');
      // The two libraries keep separate global registries: a metric registered through the other
      // one would be missing from /metrics without an error.
      assert.doesNotMatch(text, /from 'prom-client(\/[^']*)?'/, `${file} imports prom-client`);
      if (file !== join('observability', 'prom-client-core.ts')) {
        assert.doesNotMatch(text, /^import (?!type )[^;]*from '@prometheus-io\/client[^']*'/m, `${file}: value imports go through src/observability/prom-client-core.ts`);
      }
    }
  });

  it('normalises values, runtime label values and the default metrics\' samples away, and keeps the sidecar\'s label values', () => {
    const lines = normaliseExposition([
      '# HELP b2b_sidecar_build_info Always 1.',
      '# TYPE b2b_sidecar_build_info gauge',
      'b2b_sidecar_build_info{version="1.2.3",node="v24.21.0"} 1',
      'b2b_sidecar_token_refresh_total{result="success"} 4',
      'b2b_sidecar_token_refresh_total{result="success"} 5',
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
    ]);
  });
});
