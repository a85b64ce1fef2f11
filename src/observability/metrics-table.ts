import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Registry } from '@prometheus-io/client';
import { createMetrics, createRegistry, createTranslationMetrics, LABEL_VALUES, MISNAMED_DEFAULT_GAUGES, TRANSLATION_STATES } from './metrics.js';
import { codeCell, escapeCell, readmeRegion } from '../shared/readme-region.js';

const START = '<!-- metrics-table:start -->';
const END = '<!-- metrics-table:end -->';
const SIDECAR_PREFIX = 'b2b_sidecar_';
/** The Prometheus client's default metrics share these prefixes and get one row between them. */
const DEFAULT_PREFIXES = ['process_', 'nodejs_'];

/**
 * What the README says beyond a metric's `help` text (which is what Prometheus users see, so
 * wording belongs there first). Only for detail too long for `help`.
 */
const WATCHED = 'Only with `localization.watch`; one series per watched translation.';
const states = (list: readonly string[]) => `\`state\` is ${list.map(codeCell).join(', ')}.`;
const NOTES: Readonly<Record<string, string>> = {
  b2b_sidecar_local_responses_total:
    '403 guard, 400 bad target, 405, 501 TRACE, 503 no valid token, 502 service unreachable / reset / TLS, 504 service timeout.',
  b2b_sidecar_translation_units: `${states(TRANSLATION_STATES.units)} ${WATCHED}`,
  b2b_sidecar_translation_words: `${states(TRANSLATION_STATES.words)} ${WATCHED}`,
  b2b_sidecar_translation_last_change_timestamp_seconds: WATCHED,
  b2b_sidecar_translation_lookup_errors_total: WATCHED,
  b2b_sidecar_translation_rate_limit_remaining: 'Only with `localization.watch`.',
};

interface MetricInfo { name: string; type: string; help: string; labelNames: readonly string[]; upperBounds?: number[] }

/**
 * Renders the metrics table of docs/metrics.md (`| metric | type | meaning |`) from a fresh registry: one
 * row per sidecar metric with its labels, type and help text, plus the series that exist at 0
 * from the start and histogram buckets; the client's default metrics collapse into one row. The
 * README is checked against this output by test/observability/metrics-table.test.ts.
 * `register` fills the fresh registry (tests add a metric to see the table change).
 */
export async function renderMetricsTable(register: (registry: Registry) => void = registerSidecarMetrics): Promise<string> {
  const registry = createRegistry();
  register(registry);
  const metrics = registry.getMetricsAsArray() as unknown as MetricInfo[];
  const lines = ['| metric | type | meaning |', '|---|---|---|'];
  let defaults = false;
  for (const metric of metrics) {
    if (!metric.name.startsWith(SIDECAR_PREFIX) && DEFAULT_PREFIXES.some((p) => metric.name.startsWith(p))) {
      defaults = true;
      continue;
    }
    const labels = metric.labelNames.length > 0 ? `{${metric.labelNames.join(',')}}` : '';
    const meaning = [metric.help, NOTES[metric.name], buckets(metric), await preset(registry, metric)].filter(Boolean).join(' ');
    lines.push(`| ${codeCell(metric.name + labels)} | ${metric.type} | ${escapeCell(meaning)} |`);
  }
  if (defaults) {
    const dropped = MISNAMED_DEFAULT_GAUGES.map(codeCell).join(', ');
    const kept = MISNAMED_DEFAULT_GAUGES.map((n) => codeCell(n.replace(/_total$/, ''))).join(', ');
    lines.push(`| ${DEFAULT_PREFIXES.map((p) => codeCell(`${p}*`)).join(', ')} | | the Prometheus client's default process metrics, except ${dropped}: gauges must not end in \`_total\` (\`promtool check metrics\`); \`sum()\` of ${kept} gives the same totals. |`);
  }
  const labelLine = `Labels stay low-cardinality: \`route\` is ${LABEL_VALUES.route.map(codeCell).join(' or ')} (never a path), `
    + `\`method\` is one of ${LABEL_VALUES.method.map(codeCell).join(', ')}, \`code\` is the status (100–599; anything else \`0\`). `
    + 'No label ever carries a path, query string, client address or secret.';
  return `${lines.join('\n')}\n\n${labelLine}\n`;
}

/** What the sidecar can register, with idle token gauges (their values are not rendered). */
export function registerSidecarMetrics(registry: Registry): void {
  createMetrics(registry, () => ({ ageSeconds: 0, expiresInSeconds: 0, valid: false }));
  createTranslationMetrics(registry);
}

const region = readmeRegion(START, END);

/** The table currently between the README markers, or undefined when the markers are missing. */
export const readmeMetricsTable = (readme: string): string | undefined => region.read(readme);

/** `readme` with the region between the markers replaced by `table`. */
export const replaceReadmeMetricsTable = (readme: string, table: string): string => region.replace(readme, table);

/** "Buckets 10 ms … 30 s." for a histogram, read from its configured bounds. */
function buckets(metric: MetricInfo): string {
  const bounds = metric.upperBounds;
  if (metric.type !== 'histogram' || !bounds || bounds.length === 0) return '';
  return `Buckets ${duration(bounds[0]!)} … ${duration(bounds[bounds.length - 1]!)}.`;
}

function duration(seconds: number): string {
  return seconds < 1 ? `${+(seconds * 1000).toFixed(3)} ms` : `${seconds} s`;
}

/** The labelled series a fresh registry already exports at 0, so rate() sees the first increase. */
async function preset(registry: Registry, metric: MetricInfo): Promise<string> {
  if (metric.labelNames.length === 0 || metric.type !== 'counter') return '';
  const values = (await registry.getSingleMetric(metric.name)!.get()).values;
  if (values.length === 0) return '';
  const byLabel = metric.labelNames.map((label) => {
    const seen = [...new Set(values.map((v) => String(v.labels[label])))];
    return `\`${label}\` ${seen.map(codeCell).join(', ')}`;
  });
  return `Start at 0: ${byLabel.join('; ')}.`;
}



// `npm run docs:metrics` (node --import tsx src/observability/metrics-table.ts --write) regenerates the table in docs/metrics.md.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const readmePath = fileURLToPath(new URL('../../docs/metrics.md', import.meta.url));
  const table = await renderMetricsTable();
  if (process.argv.includes('--write')) {
    writeFileSync(readmePath, replaceReadmeMetricsTable(readFileSync(readmePath, 'utf8'), table));
    process.stdout.write(`updated the metrics table in ${readmePath}\n`);
  } else {
    process.stdout.write(table);
  }
}
