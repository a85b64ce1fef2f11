import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Registry } from '@prometheus-io/client';
import { createMetrics, createRegistry } from '../../src/observability/metrics.js';
import type { TokenStatus } from '../../src/observability/status.js';
import { RequestSeries } from '../../src/observability/request-series.js';

type Labels = Record<string, string | number>;

async function values(registry: Registry, name: string): Promise<Array<{ labels: Labels; value: number; metricName?: string }>> {
  const metric = registry.getSingleMetric(name);
  assert.ok(metric, `${name} is registered`);
  return (await metric.get()).values as Array<{ labels: Labels; value: number; metricName?: string }>;
}

async function value(registry: Registry, name: string, labels: Labels = {}): Promise<number | undefined> {
  // Histogram series (_bucket, _sum, _count) live under the histogram's own name.
  const all = await values(registry, name.replace(/_(bucket|sum|count)$/, ''));
  const match = all.find((v) => (v.metricName ?? name) === name
    && Object.entries(labels).every(([k, l]) => String(v.labels[k]) === String(l)));
  return match?.value;
}

/** The token's part of the one status, as token/token-view.ts computes it. */
function token(over: Partial<TokenStatus> = {}): TokenStatus {
  return { ready: false, live: true, ageSeconds: 0, expiresInSeconds: 0, warnings: [], ...over };
}

function setup(initial?: TokenStatus) {
  const registry = createRegistry();
  const state: { token: TokenStatus | undefined; reads: number } = { token: initial, reads: 0 };
  const metrics = createMetrics(registry, { status: () => (state.reads++, { token: state.token }), replayHeldBytes: () => 0 });
  // The per-set counters start at 0 when the service part makes the set.
  metrics.credentialStarted('default');
  return { registry, state, metrics };
}

describe('createMetrics', () => {
  it('renders the token gauges from the token part of the one status at scrape time', async () => {
    const { registry, state } = setup();
    assert.equal(await value(registry, 'b2b_sidecar_token_valid'), 0);
    assert.equal(await value(registry, 'b2b_sidecar_token_expires_in_seconds'), 0);
    state.token = token({ ready: true, ageSeconds: 10, expiresInSeconds: 890 });
    assert.equal(await value(registry, 'b2b_sidecar_token_age_seconds'), 10);
    assert.equal(await value(registry, 'b2b_sidecar_token_expires_in_seconds'), 890);
    assert.equal(await value(registry, 'b2b_sidecar_token_valid'), 1);
    // Age grows, expiry falls, then renewal resets both.
    state.token = token({ ready: true, ageSeconds: 600, expiresInSeconds: 300 });
    assert.equal(await value(registry, 'b2b_sidecar_token_age_seconds'), 600);
    state.token = token({ ready: true, ageSeconds: 0, expiresInSeconds: 900 });
    const text = await registry.metrics();
    assert.match(text, /^b2b_sidecar_token_age_seconds\{credential="default"\} 0$/m);
    assert.match(text, /^b2b_sidecar_token_expires_in_seconds\{credential="default"\} 900$/m);
  });

  it('renders the wall-clock gauges and attach suspect from the same status, read once per scrape', async () => {
    const { registry, state } = setup(token({
      ready: false, reason: 'the token was rejected', expiresAt: '2026-11-27T10:15:00.000Z', nextAttemptAt: '2026-11-27T10:05:30.500Z',
      attachSuspect: { evidence: 'unauthorized', path: '/pub/b2b/v1/objects' },
    }));
    state.reads = 0;
    const text = await registry.metrics();
    assert.equal(state.reads, 1, 'one status per scrape, so the gauges of one scrape agree');
    assert.match(text, /^b2b_sidecar_token_expiry_timestamp_seconds\{credential="default"\} 1795774500$/m);
    assert.match(text, /^b2b_sidecar_token_next_refresh_timestamp_seconds\{credential="default"\} 1795773930\.5$/m);
    assert.match(text, /^b2b_sidecar_attach_suspect\{credential="default"\} 1$/m);
    assert.match(text, /^b2b_sidecar_token_valid\{credential="default"\} 0$/m);
    await registry.metrics();
    assert.equal(state.reads, 2);
    state.token = undefined;
    const idle = await registry.metrics();
    for (const name of ['token_expiry_timestamp_seconds', 'token_next_refresh_timestamp_seconds', 'attach_suspect', 'token_age_seconds']) {
      assert.match(idle, new RegExp(`^b2b_sidecar_${name}\\{credential="default"\\} 0$`, 'm'), `${name} is 0 without a token`);
    }
  });

  it('pre-initialises every refresh result to 0 and counts refreshes by result', async () => {
    const { registry, metrics } = setup();
    for (const result of ['success', 'unauthorized', 'error']) {
      assert.equal(await value(registry, 'b2b_sidecar_token_refresh_total', { result }), 0);
    }
    metrics.tokenRefreshed('success', 0.2);
    metrics.tokenRefreshed('success', 0.3);
    metrics.tokenRefreshed('unauthorized', 0.1);
    metrics.tokenRefreshed('error', 10);
    assert.equal(await value(registry, 'b2b_sidecar_token_refresh_total', { result: 'success' }), 2);
    assert.equal(await value(registry, 'b2b_sidecar_token_refresh_total', { result: 'unauthorized' }), 1);
    assert.equal(await value(registry, 'b2b_sidecar_token_refresh_total', { result: 'error' }), 1);
    assert.equal(await value(registry, 'b2b_sidecar_token_refresh_duration_seconds_count'), 4);
    assert.ok(Math.abs((await value(registry, 'b2b_sidecar_token_refresh_duration_seconds_sum'))! - 10.6) < 1e-9);
    assert.equal(await value(registry, 'b2b_sidecar_token_refresh_duration_seconds_bucket', { le: 0.25 }), 2);
  });

  it('counts upstream 401s and guard denials', async () => {
    const { registry, metrics } = setup();
    assert.equal(await value(registry, 'b2b_sidecar_upstream_unauthorized_total'), 0);
    metrics.upstreamUnauthorized();
    metrics.upstreamUnauthorized();
    metrics.guardDenied();
    assert.equal(await value(registry, 'b2b_sidecar_upstream_unauthorized_total'), 2);
    assert.equal(await value(registry, 'b2b_sidecar_guard_denied_total'), 1);
  });

  it('moves the inflight gauge up and down', async () => {
    const { registry, metrics } = setup();
    metrics.requestStarted();
    metrics.requestStarted();
    assert.equal(await value(registry, 'b2b_sidecar_inflight_requests'), 2);
    metrics.requestEnded();
    assert.equal(await value(registry, 'b2b_sidecar_inflight_requests'), 1);
  });

  it('counts requests and observes latency by route, method and code', async () => {
    const { registry, metrics } = setup();
    metrics.responseStarted('service', 'GET', 200, 0.004);
    metrics.responseStarted('service', 'GET', 200, 0.02);
    metrics.responseStarted('service', 'POST', 502, 1.5);
    metrics.responseStarted('localization', 'HEAD', 404, 0.0005);
    const total = (labels: Labels) => value(registry, 'b2b_sidecar_requests_total', labels);
    assert.equal(await total({ route: 'service', method: 'GET', code: 200 }), 2);
    assert.equal(await total({ route: 'service', method: 'POST', code: 502 }), 1);
    assert.equal(await total({ route: 'localization', method: 'HEAD', code: 404 }), 1);
    const hist = (suffix: string, labels: Labels) => value(registry, `b2b_sidecar_request_duration_seconds_${suffix}`, labels);
    assert.equal(await hist('count', { route: 'service', method: 'GET', code: 200 }), 2);
    assert.equal(await hist('bucket', { route: 'service', method: 'GET', code: 200, le: 0.005 }), 1);
    assert.equal(await hist('bucket', { route: 'localization', method: 'HEAD', code: 404, le: 0.001 }), 1);
    assert.equal(await hist('bucket', { route: 'service', method: 'POST', code: 502, le: 30 }), 1);
  });

  it('normalises unknown methods to OTHER and out-of-range codes to 0 (docs/traps.md T25)', async () => {
    const { registry, metrics } = setup();
    metrics.responseStarted('service', 'PROPFIND', 207, 0.01);
    metrics.responseStarted('service', 'get', 200, 0.01);
    metrics.responseStarted('service', 'GET', 42, 0.01);
    metrics.responseStarted('service', 'GET', 600, 0.01);
    metrics.responseStarted('service', 'GET', Number.NaN, Number.NaN);
    metrics.responseStarted('service', 'GET', 200.5, -1);
    const series = await values(registry, 'b2b_sidecar_requests_total');
    assert.deepEqual(
      series.map((s) => `${s.labels.method} ${s.labels.code} ${s.value}`).sort(),
      ['GET 0 4', 'OTHER 200 1', 'OTHER 207 1'],
    );
  });

  it('keeps the series count bounded and reuses its series on the hot path', async () => {
    const { registry, metrics } = setup();
    const original = RequestSeries.prototype.add;
    let added = 0;
    RequestSeries.prototype.add = function (this: RequestSeries, key, labels) { added++; return original.call(this, key, labels); };
    try {
      for (let i = 0; i < 10_000; i++) metrics.responseStarted('service', `BOGUS${i}`, 200, 0.001);
      assert.equal(added, 1, 'one series for the one label set, then the cache');
      for (let i = 0; i < 10_000; i++) metrics.responseStarted('service', `X${i}`, i % 1000, 0.001);
    } finally {
      RequestSeries.prototype.add = original;
    }
    const series = await values(registry, 'b2b_sidecar_requests_total');
    assert.equal(series.length, 501, 'codes 100..599 plus 0, all under OTHER');
    assert.equal(added, 501);
    assert.equal(await value(registry, 'b2b_sidecar_request_duration_seconds_count', { method: 'OTHER', code: 200 }), 10_010);
  });

  it('registers default process metrics on its own registry only', async () => {
    const { registry } = setup();
    const text = await registry.metrics();
    assert.match(text, /^process_cpu_user_seconds_total /m);
    assert.match(text, /^nodejs_eventloop_lag_seconds /m);
  });

  it('counts the answers the sidecar gives itself by route and code, 502/503/504 pre-initialised to 0', async () => {
    const { registry, metrics } = setup();
    for (const route of ['service', 'localization']) {
      for (const code of [502, 503, 504]) assert.equal(await value(registry, 'b2b_sidecar_local_responses_total', { route, code }), 0);
    }
    metrics.localResponse('service', 502);
    metrics.localResponse('service', 502);
    metrics.localResponse('localization', 403);
    metrics.localResponse('service', 9999);
    assert.equal(await value(registry, 'b2b_sidecar_local_responses_total', { route: 'service', code: 502 }), 2);
    assert.equal(await value(registry, 'b2b_sidecar_local_responses_total', { route: 'localization', code: 403 }), 1);
    assert.equal(await value(registry, 'b2b_sidecar_local_responses_total', { route: 'service', code: 0 }), 1, 'out-of-range codes become 0');
    // A passed-through answer is not a local one.
    metrics.responseStarted('service', 'GET', 502, 0.01);
    assert.equal(await value(registry, 'b2b_sidecar_local_responses_total', { route: 'service', code: 502 }), 2);
  });

  it('exports no gauge or histogram whose name ends in _total (promtool check metrics: only counters may)', async () => {
    const { registry, metrics } = setup();
    metrics.responseStarted('service', 'GET', 200, 0.01);
    const misnamed = (await registry.getMetricsAsJSON())
      .filter((m) => String(m.type) !== 'counter' && m.name.endsWith('_total'))
      .map((m) => m.name);
    assert.deepEqual(misnamed, []);
    // The per-type gauges stay: sum(nodejs_active_handles) is the total.
    assert.ok(registry.getSingleMetric('nodejs_active_handles'));
    assert.equal(registry.getSingleMetric('nodejs_active_handles_total'), undefined);
  });

  it('lets two registries exist side by side and refuses a second set on one registry (docs/traps.md T24)', async () => {
    const a = setup();
    const b = setup(token({ ready: true, ageSeconds: 5, expiresInSeconds: 1 }));
    a.metrics.guardDenied();
    assert.equal(await value(a.registry, 'b2b_sidecar_guard_denied_total'), 1);
    assert.equal(await value(b.registry, 'b2b_sidecar_guard_denied_total'), 0);
    assert.equal(await value(b.registry, 'b2b_sidecar_token_valid'), 1);
    assert.throws(() => createMetrics(a.registry), /already holds the sidecar metrics/);
  });
});
