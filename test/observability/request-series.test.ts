import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from '@prometheus-io/client';
import { RequestSeries } from '../../src/observability/request-series.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const LABELS = ['route', 'method', 'code'] as const;

/**
 * The same observations through prom-client's own Counter and Histogram (the library's
 * exposition is the reference: Prometheus and promtool read it) and through RequestSeries.
 */
function both(observations: Array<[Record<'route' | 'method' | 'code', string>, number]>, contentType?: string) {
  const reference = new Registry();
  if (contentType) reference.setContentType(contentType as never);
  const counter = new Counter({ name: 'x_requests_total', help: 'Requests.', labelNames: LABELS, registers: [reference] });
  const histogram = new Histogram({ name: 'x_duration_seconds', help: 'Durations.', labelNames: LABELS, buckets: BUCKETS, registers: [reference] });
  const ours = new Registry();
  if (contentType) ours.setContentType(contentType as never);
  const series = new RequestSeries(BUCKETS);
  series.registerCounter(ours, { name: 'x_requests_total', help: 'Requests.', labelNames: LABELS });
  series.registerHistogram(ours, { name: 'x_duration_seconds', help: 'Durations.', labelNames: LABELS });
  const keys = new Map<string, number>();
  const record = (labels: Record<'route' | 'method' | 'code', string>, value: number) => {
    counter.inc(labels);
    histogram.observe(labels, value);
    const name = JSON.stringify(labels);
    const key = keys.get(name) ?? keys.set(name, keys.size).size - 1;
    series.observe(series.get(key) ?? series.add(key, labels), value);
  };
  for (const [labels, value] of observations) record(labels, value);
  return { reference, ours, record };
}

describe('RequestSeries', () => {
  it('exports exactly what prom-client\'s Counter and Histogram export for the same observations', async () => {
    const get = (code: string) => ({ route: 'service', method: 'GET', code });
    const observations: Array<[Record<'route' | 'method' | 'code', string>, number]> = [
      // On a bound (le is inclusive), between bounds, below the first, above the last, zero.
      [get('200'), 0.001], [get('200'), 0.0011], [get('200'), 0.0004], [get('200'), 31], [get('200'), 0],
      [{ route: 'localization', method: 'POST', code: '502' }, 2.5], [get('404'), 0.3], [get('200'), 10],
    ];
    for (let i = 0; i < 500; i++) observations.push([get(i % 7 ? '200' : '503'), (i % 97) / 137]);
    const { reference, ours } = both(observations);
    for (const name of ['x_requests_total', 'x_duration_seconds']) {
      assert.equal(await ours.getSingleMetricAsString(name), await reference.getSingleMetricAsString(name), name);
      // The JSON form too: the metrics table (docs/metrics.md) and tests read it.
      const [a, b] = await Promise.all([ours.getSingleMetric(name)!.get(), reference.getSingleMetric(name)!.get()]);
      assert.deepEqual({ ...a, values: a.values.map((v) => ({ ...v })) }, { ...b, values: b.values.map((v) => { const { labels, value, metricName } = v as typeof v & { metricName?: string }; return { labels, value, ...(metricName ? { metricName } : {}) }; }) });
    }
    assert.equal(await ours.metrics(), await reference.metrics());
  });

  it('exports nothing before the first request, as a labelled prom-client metric does', async () => {
    const { reference, ours } = both([]);
    assert.equal(await ours.metrics(), await reference.metrics());
  });

  it('matches prom-client in an OpenMetrics registry (counters lose `_total` from their family name)', async () => {
    const { reference, ours } = both([[{ route: 'service', method: 'GET', code: '200' }, 0.003]], Registry.OPENMETRICS_CONTENT_TYPE);
    assert.equal(await ours.metrics(), await reference.metrics());
  });

  it('drops its label sets on resetMetrics(), as prom-client does, and counts again from the next request', async () => {
    const get = { route: 'service', method: 'GET', code: '200' };
    const { reference, ours, record } = both([[get, 0.003], [{ ...get, code: '503' }, 0.2]]);
    reference.resetMetrics();
    ours.resetMetrics();
    assert.equal(await ours.metrics(), await reference.metrics());
    record(get, 0.004);
    assert.equal(await ours.metrics(), await reference.metrics());
  });
});
