import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { createMetrics, createRegistry } from '../../src/observability/metrics.js';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

interface Rule { alert?: string; record?: string; expr: string; labels?: Record<string, string>; annotations?: Record<string, string> }
interface RuleTest { alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }
interface Panel { type: string; id: number; title: string; targets?: Array<{ expr: string }>; panels?: Panel[] }

const allRules: Rule[] = parse(read('deploy/prometheus/alerts.yaml')).groups.flatMap((g: { rules: Rule[] }) => g.rules);
const rules = allRules.filter((r): r is Rule & { alert: string } => r.alert !== undefined);
/** Series the rule file records itself (`record:`), usable in alerts like exported ones. */
const recorded = allRules.flatMap((r) => (r.record ? [r.record] : []));
const ruleTests: RuleTest[] = parse(read('deploy/prometheus/alerts.test.yaml')).tests;
const dashboard = JSON.parse(read('deploy/grafana/b2b-sidecar.json')) as {
  panels: Panel[]; templating: { list: Array<{ type: string; query: string | { query: string } }> };
};

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan']);

/**
 * Metric names used in a PromQL expression. Strings, label matchers, ranges, grouping label
 * lists and Grafana variables are removed first; what is left that is not a function call,
 * keyword or part of a number is a metric name.
 */
function metricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, '')
    .replace(/\$\{?\w+\}?/g, '');
  const names = [...stripped.matchAll(/(?<![\w.:])[a-zA-Z_:][\w:]*(?![\w:]|\s*\()/g)].map((m) => m[0]);
  return names.filter((n) => !KEYWORDS.has(n.toLowerCase()));
}

/** Grafana's `label_values(expr, label)` names a metric in its first argument only. */
function templatingExpr(query: string): string | undefined {
  const labelValues = /^\s*label_values\((.*),\s*\w+\s*\)\s*$/s.exec(query);
  if (labelValues) return labelValues[1];
  if (/^\s*label_values\(/.test(query)) return undefined;
  return /^\s*query_result\((.*)\)\s*$/s.exec(query)?.[1];
}

function dashboardExprs(): string[] {
  const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
  const fromPanels = panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
  const fromVariables = dashboard.templating.list
    .filter((v) => v.type === 'query')
    .map((v) => templatingExpr(typeof v.query === 'string' ? v.query : v.query.query))
    .filter((e): e is string => e !== undefined);
  return [...fromPanels, ...fromVariables];
}

async function exportedNames(): Promise<Set<string>> {
  const registry = createRegistry();
  createMetrics(registry);
  // `up` is Prometheus's own per-target series.
  const names = new Set(['up']);
  for (const metric of await registry.getMetricsAsJSON()) {
    names.add(metric.name);
    if (['histogram', 'summary'].includes(String(metric.type))) {
      for (const suffix of ['_bucket', '_sum', '_count']) names.add(metric.name + suffix);
    }
  }
  return names;
}

describe('dashboard and alert rules', () => {
  it('extracts metric names from PromQL, ignoring functions, labels, ranges and variables', () => {
    assert.deepEqual(
      metricNames('histogram_quantile(0.99, sum by (le, code) (rate(a_bucket{job=~"$job",x="y(z)"}[$__rate_interval] offset 5m))) > 1e3 and on(instance) b_total or absent(c{d="e"})'),
      ['a_bucket', 'b_total', 'c'],
    );
    assert.equal(templatingExpr('label_values(m{job=~"$job"}, instance)'), 'm{job=~"$job"}');
    assert.equal(templatingExpr('label_values(job)'), undefined);
  });

  it('uses only metric names the sidecar exports, in the dashboard and in the alerts', async () => {
    const exported = new Set([...await exportedNames(), ...recorded]);
    const used = new Map<string, string>();
    for (const expr of dashboardExprs()) for (const n of metricNames(expr)) used.set(n, 'dashboard');
    for (const rule of allRules) for (const n of metricNames(rule.expr)) used.set(n, rule.alert ? `alert ${rule.alert}` : `record ${rule.record}`);
    const unknown = [...used].filter(([n]) => !exported.has(n)).map(([n, where]) => `${n} (${where})`);
    assert.deepEqual(unknown, []);
    // Guard against an extractor that silently finds nothing.
    for (const name of [
      'b2b_sidecar_token_age_seconds', 'b2b_sidecar_token_expires_in_seconds', 'b2b_sidecar_token_valid',
      'b2b_sidecar_token_refresh_total', 'b2b_sidecar_upstream_unauthorized_total', 'b2b_sidecar_requests_total',
      'b2b_sidecar_request_duration_seconds_bucket', 'b2b_sidecar_guard_denied_total', 'b2b_sidecar_inflight_requests', 'up',
      'b2b_sidecar_local_responses_total', 'b2b_sidecar:scrape_target',
    ]) assert.ok(used.has(name), `${name} is used somewhere`);
  });

  it('names in docs/runbook.md and docs/troubleshooting.md only metrics the sidecar exports', async () => {
    const exported = await exportedNames();
    const named = new Set([...read('docs/runbook.md').matchAll(/\bb2b_sidecar_[a-z_]+/g), ...read('docs/troubleshooting.md').matchAll(/\bb2b_sidecar_[a-z_]+/g)].map((m) => m[0]));
    assert.ok(named.size >= 4, 'the extraction found the metrics the runbook names');
    assert.deepEqual([...named].filter((n) => !exported.has(n)), []);
  });

  it('the runbook\'s lines make every runbook_url absolute for a base URL, change nothing else, and promtool accepts the result', () => {
    const block = /## Links to this runbook[\s\S]*?```sh\n([\s\S]*?)```/.exec(read('docs/runbook.md'))?.[1];
    assert.ok(block, 'docs/runbook.md has the sh block under "Links to this runbook"');
    const base = 'https://docs.example.net/b2b-sidecar/v9/';
    // Run as written, from a folder that has the repository's deploy/ (the npm package has it too).
    const dir = mkdtempSync(join(tmpdir(), 'b2b-runbook-url-'));
    try {
      symlinkSync(fileURLToPath(new URL('deploy', root)), join(dir, 'deploy'));
      const script = block.replace(/^RUNBOOK_BASE=.*$/m, `RUNBOOK_BASE=${base}`);
      const run = spawnSync('bash', ['-euo', 'pipefail', '-c', script], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
      assert.equal(run.status, 0, `${run.stdout}${run.stderr} (promtool: Debian's prometheus package)`);
      const out = parse(readFileSync(join(dir, 'b2b-sidecar-alerts.yaml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> };
      const outRules = out.groups.flatMap((g) => g.rules);
      assert.equal(outRules.length, allRules.length);
      outRules.forEach((rule, i) => {
        if (!rule.alert) return assert.deepEqual(rule, allRules[i]);
        assert.equal(rule.annotations?.runbook_url, `${base}docs/runbook.md#${rule.alert.toLowerCase()}`);
        const { runbook_url: _a, ...rest } = rule.annotations ?? {};
        const { runbook_url: _b, ...original } = allRules[i]!.annotations ?? {};
        assert.deepEqual({ ...rule, annotations: rest }, { ...allRules[i], annotations: original }, rule.alert);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives every alert a severity, summary, description and runbook', () => {
    assert.deepEqual(rules.map((r) => r.alert).sort(), [
      'B2BSidecarAttachSuspect', 'B2BSidecarClientCertificateExpiring', 'B2BSidecarCredentialsRejected', 'B2BSidecarDown', 'B2BSidecarFleetMintingTooOften', 'B2BSidecarFleetStoreDown', 'B2BSidecarListenerFull', 'B2BSidecarLocalErrors', 'B2BSidecarNoValidToken', 'B2BSidecarTokenExpiringSoon',
      'B2BSidecarTokenRefreshFailing', 'B2BSidecarTokenRenewalOverdue', 'B2BSidecarTokenSuperseded', 'B2BSidecarUpstreamUnauthorizedSpike',
    ]);
    for (const rule of rules) {
      assert.match(rule.labels?.severity ?? '', /^(critical|warning)$/, rule.alert);
      for (const key of ['summary', 'description']) {
        assert.ok((rule.annotations?.[key] ?? '').length > 10, `${rule.alert} has annotations.${key}`);
      }
      assert.ok((rule.annotations?.runbook_url ?? rule.annotations?.runbook ?? '').length > 10, `${rule.alert} has a runbook`);
    }
  });

  it('has a firing and a quiet promtool case for every alert', () => {
    const cases = ruleTests.flatMap((t) => t.alert_rule_test);
    for (const { alert } of rules) {
      const mine = cases.filter((c) => c.alertname === alert);
      assert.ok(mine.some((c) => c.exp_alerts.length > 0), `${alert} fires somewhere`);
      assert.ok(mine.some((c) => c.exp_alerts.length === 0), `${alert} stays quiet somewhere`);
    }
  });

  it('keeps the credential label through every join and aggregation of an alert on per-token series (docs/traps.md T92)', () => {
    // Per token (per credential set): the token's gauges and counters, its 401s and its attach state.
    const perToken = /\bb2b_sidecar_(token_\w+|gentoken_\w+|upstream_unauthorized_total|attach_suspect)\b/;
    // B2BSidecarDown is about the scrape target, whatever sets it serves.
    const checked = rules.filter((r) => perToken.test(r.expr) && r.alert !== 'B2BSidecarDown');
    assert.ok(checked.length >= 8, 'the per-token alerts are found');
    for (const rule of checked) {
      for (const [, kind, labels] of rule.expr.matchAll(/\b(by|on|without|ignoring)\s*\(([^)]*)\)/g)) {
        const names = labels!.split(',').map((l) => l.trim());
        if (kind === 'without' || kind === 'ignoring') assert.ok(!names.includes('credential'), `${rule.alert}: ${kind} (${labels}) drops credential`);
        else assert.ok(names.includes('credential'), `${rule.alert}: ${kind} (${labels}) must list credential`);
      }
      assert.match(rule.annotations?.summary ?? '', /\$labels\.credential/, `${rule.alert}'s summary names the set`);
    }
  });

  it('selects no scrape job by name, so the alerts work under any job (kubernetes-pods, ServiceMonitor jobs)', () => {
    for (const rule of allRules) assert.doesNotMatch(rule.expr, /\bjob\s*=~?\s*"/, rule.alert ?? rule.record);
  });

  it('records b2b_sidecar:scrape_target before B2BSidecarDown reads it, in the same group', () => {
    const groups = parse(read('deploy/prometheus/alerts.yaml')).groups as Array<{ rules: Rule[] }>;
    const group = groups.find((g) => g.rules.some((r) => r.alert === 'B2BSidecarDown'))!;
    const names = group.rules.map((r) => r.alert ?? r.record);
    assert.ok(names.indexOf('b2b_sidecar:scrape_target') >= 0 && names.indexOf('b2b_sidecar:scrape_target') < names.indexOf('B2BSidecarDown'));
  });

  it('has a credential variable (several, All included) and filters every per-token panel by it', () => {
    const variable = dashboard.templating.list.find((v) => (v as { name?: string }).name === 'credential') as
      { type: string; multi?: boolean; includeAll?: boolean; allValue?: string; query: { query: string } } | undefined;
    assert.ok(variable, 'a credential variable');
    assert.equal(variable.type, 'query');
    assert.equal(variable.multi, true);
    assert.equal(variable.includeAll, true);
    // ".*" also matches a series without the label: a sidecar with one set that does not export it.
    assert.equal(variable.allValue, '.*');
    assert.match(variable.query.query, /label_values\(.*, credential\)/);
    const perToken = /\bb2b_sidecar_(token_\w+|gentoken_\w+|upstream_unauthorized_total|attach_suspect)/;
    const exprs = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).flatMap((p) => p.targets ?? []).map((t) => t.expr).filter((e) => perToken.test(e));
    assert.ok(exprs.length >= 6);
    for (const expr of exprs) assert.match(expr, /credential=~"\$credential"/, expr);
  });

  it('gives every dashboard panel a query and a unique id', () => {
    const panels = dashboard.panels.filter((p) => p.type !== 'row');
    for (const p of panels) assert.ok((p.targets ?? []).length > 0 && p.targets!.every((t) => t.expr), p.title);
    const ids = dashboard.panels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length);
  });
});
