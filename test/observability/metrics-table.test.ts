import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { SIDECAR_METRICS, TRANSLATION_METRICS, type MetricDefinition } from '../../src/observability/metric-definitions.js';
import { registerMetrics } from '../../src/observability/metric-registration.js';
import { readmeMetricsTable, renderMetricsTable, replaceReadmeMetricsTable } from '../../src/observability/metrics-table.js';
import { createMetrics, createRegistry, createTranslationMetrics } from '../../src/observability/metrics.js';

const readme = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');

describe('the metrics table (docs/metrics.md)', () => {
  it('matches the metrics registry', async () => {
    const table = readmeMetricsTable(readme);
    assert.ok(table !== undefined, 'docs/metrics.md lacks the <!-- metrics-table:start --> ... <!-- metrics-table:end --> markers');
    assert.equal(table, renderMetricsTable(), 'docs/metrics.md is out of date: run `npm run docs:metrics`');
  });

  it('has a row for every sidecar metric with its type and labels, defaults collapsed into one row', async () => {
    const registry = createRegistry();
    createMetrics(registry);
    const table = renderMetricsTable();
    const sidecar = registry.getMetricsAsArray().filter((m) => m.name.startsWith('b2b_sidecar_'));
    assert.ok(sidecar.length >= 14);
    for (const metric of sidecar) {
      const { name, labelNames } = metric as unknown as { name: string; labelNames: string[] };
      const labels = labelNames.length > 0 ? `{${labelNames.join(',')}}` : '';
      assert.match(table, new RegExp(`^\\| \`${name}${labels.replace(/[{}]/g, '\\$&')}\` \\| (counter|gauge|histogram) \\| \\S`, 'm'), name);
    }
    assert.match(table, /^\| `b2b_sidecar_requests_total\{route,method,code\}` \| counter \|/m);
    assert.match(table, /^\| `b2b_sidecar_token_refresh_duration_seconds` \| histogram \| .*Buckets 10 ms … 30 s\./m);
    assert.match(table, /^\| `b2b_sidecar_upstream_retries_total\{reason\}` \| counter \| .*Start at 0: `reason` `reset`, `broken_pipe`, `closed`\./m);
    assert.match(table, /^\| `process_\*`, `nodejs_\*` \| \| .*except `nodejs_active_handles_total`/m);
    assert.ok(!/^\| `(process|nodejs)_[a-z]/m.test(table), 'default metrics get no row of their own');
    assert.match(table, /`method` is one of `GET`, .*`OTHER`/);
  });

  it('registers and documents a metric from its one declaration in a table', async () => {
    const table = {
      ...SIDECAR_METRICS,
      replays: {
        name: 'b2b_sidecar_unauthorized_replays_total', type: 'counter', help: 'Requests replayed after a 401.',
        labels: ['route'], startAtZero: [['service'], ['localization']], note: 'Only after a fresh token.',
      },
    } satisfies Record<string, MetricDefinition>;
    const registry = createRegistry();
    const handles = registerMetrics(registry, table, () => ({ token: undefined, credentials: [], replayHeldBytes: 0, shares: { streamsActive: 0, streamsWaiting: 0, reservedHeldBytes: 0, limits: undefined }, build: { version: 'x', node: 'y' }, certificates: new Map() }));
    handles.replays.labels('service').inc();
    const text = await registry.metrics();
    assert.match(text, /^# HELP b2b_sidecar_unauthorized_replays_total Requests replayed after a 401\.\n# TYPE b2b_sidecar_unauthorized_replays_total counter\n/m);
    assert.match(text, /^b2b_sidecar_unauthorized_replays_total\{route="service"\} 1$/m);
    assert.match(text, /^b2b_sidecar_unauthorized_replays_total\{route="localization"\} 0$/m);
    const doc = renderMetricsTable([table]);
    assert.notEqual(doc, readmeMetricsTable(readme), 'an undocumented metric fails the docs check');
    assert.match(doc, /^\| `b2b_sidecar_unauthorized_replays_total\{route\}` \| counter \| Requests replayed after a 401\. Only after a fresh token\. Start at 0: `route` `service`, `localization`\. \|$/m);
  });

  it('refuses a declaration registration would not honour', () => {
    const gauge = { name: 'b2b_sidecar_x', type: 'gauge', help: 'x', labels: ['route'], startAtZero: [['service']] } satisfies MetricDefinition;
    assert.throws(() => registerMetrics(createRegistry(), { gauge }), /b2b_sidecar_x: startAtZero is for counters/);
  });

  it('registers exactly the declared metrics, in the declared order, so no metric escapes the table', () => {
    const registry = createRegistry();
    createMetrics(registry);
    createTranslationMetrics(registry);
    const registered = registry.getMetricsAsArray().map((m) => (m as unknown as { name: string }).name).filter((n) => n.startsWith('b2b_sidecar_'));
    assert.deepEqual(registered, [...Object.values(SIDECAR_METRICS), ...Object.values(TRANSLATION_METRICS)].map((d) => d.name));
  });

  it('replaces only the region between the markers', () => {
    const text = 'intro\n<!-- metrics-table:start -->\nold\n<!-- metrics-table:end -->\noutro\n';
    const updated = replaceReadmeMetricsTable(text, '| new |\n');
    assert.equal(updated, 'intro\n<!-- metrics-table:start -->\n| new |\n<!-- metrics-table:end -->\noutro\n');
    assert.equal(readmeMetricsTable(updated), '| new |\n');
    assert.throws(() => replaceReadmeMetricsTable('no markers', '| x |\n'), /metrics-table:start/);
  });
});
