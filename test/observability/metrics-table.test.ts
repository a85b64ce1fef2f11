import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Counter } from '../../src/observability/prom-client-core.js';
import {
  readmeMetricsTable, registerSidecarMetrics, renderMetricsTable, replaceReadmeMetricsTable,
} from '../../src/observability/metrics-table.js';
import { createMetrics, createRegistry } from '../../src/observability/metrics.js';

const readme = readFileSync(new URL('../../docs/metrics.md', import.meta.url), 'utf8');

describe('the metrics table (docs/metrics.md)', () => {
  it('matches the metrics registry', async () => {
    const table = readmeMetricsTable(readme);
    assert.ok(table !== undefined, 'docs/metrics.md lacks the <!-- metrics-table:start --> ... <!-- metrics-table:end --> markers');
    assert.equal(table, await renderMetricsTable(), 'docs/metrics.md is out of date: run `npm run docs:metrics`');
  });

  it('has a row for every sidecar metric with its type and labels, defaults collapsed into one row', async () => {
    const registry = createRegistry();
    createMetrics(registry, () => ({ ageSeconds: 0, expiresInSeconds: 0, valid: false }));
    const table = await renderMetricsTable();
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

  it('changes when a metric is added, so an undocumented metric fails the README check', async () => {
    const table = await renderMetricsTable((registry) => {
      registerSidecarMetrics(registry);
      new Counter({ name: 'b2b_sidecar_unauthorized_replays_total', help: 'Requests replayed after a 401.', registers: [registry] });
    });
    assert.notEqual(table, readmeMetricsTable(readme));
    assert.match(table, /^\| `b2b_sidecar_unauthorized_replays_total` \| counter \| Requests replayed after a 401\. \|$/m);
  });

  it('replaces only the region between the markers', () => {
    const text = 'intro\n<!-- metrics-table:start -->\nold\n<!-- metrics-table:end -->\noutro\n';
    const updated = replaceReadmeMetricsTable(text, '| new |\n');
    assert.equal(updated, 'intro\n<!-- metrics-table:start -->\n| new |\n<!-- metrics-table:end -->\noutro\n');
    assert.equal(readmeMetricsTable(updated), '| new |\n');
    assert.throws(() => replaceReadmeMetricsTable('no markers', '| x |\n'), /metrics-table:start/);
  });
});
