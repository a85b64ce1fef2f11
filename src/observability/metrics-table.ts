import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { LABEL_VALUES, SIDECAR_METRICS, TRANSLATION_METRICS, type MetricDefinition } from './metric-definitions.js';
import { MISNAMED_DEFAULT_GAUGES } from './metrics.js';
import { codeCell, escapeCell, readmeRegion } from '../shared/readme-region.js';

const START = '<!-- metrics-table:start -->';
const END = '<!-- metrics-table:end -->';
/** The Prometheus client's default metrics share these prefixes and get one row between them. */
const DEFAULT_PREFIXES = ['process_', 'nodejs_'];

/**
 * Renders the metrics table of docs/metrics.md (`| metric | type | meaning |`) from the metric
 * definitions (metric-definitions.ts), the same tables registration iterates: one row per metric
 * with its labels, type, help text and note, the series that exist at 0 from the start and its
 * buckets; then one row for the client's default metrics. docs/metrics.md is checked against this
 * output by test/observability/metrics-table.test.ts.
 */
export function renderMetricsTable(tables: ReadonlyArray<Readonly<Record<string, MetricDefinition>>> = [SIDECAR_METRICS, TRANSLATION_METRICS]): string {
  const lines = ['| metric | type | meaning |', '|---|---|---|'];
  for (const metric of tables.flatMap((table) => Object.values(table))) {
    const labels = metric.labels?.length ? `{${metric.labels.join(',')}}` : '';
    const meaning = [metric.help, metric.note, buckets(metric), startAtZero(metric)].filter(Boolean).join(' ');
    lines.push(`| ${codeCell(metric.name + labels)} | ${metric.type} | ${escapeCell(meaning)} |`);
  }
  const dropped = MISNAMED_DEFAULT_GAUGES.map(codeCell).join(', ');
  const kept = MISNAMED_DEFAULT_GAUGES.map((n) => codeCell(n.replace(/_total$/, ''))).join(', ');
  lines.push(`| ${DEFAULT_PREFIXES.map((p) => codeCell(`${p}*`)).join(', ')} | | the Prometheus client's default process metrics, except ${dropped}: gauges must not end in \`_total\` (\`promtool check metrics\`); \`sum()\` of ${kept} gives the same totals. |`);
  const labelLine = `Labels stay low-cardinality: \`route\` is ${LABEL_VALUES.route.map(codeCell).join(' or ')} (never a path), `
    + `\`method\` is one of ${LABEL_VALUES.method.map(codeCell).join(', ')}, \`code\` is the status (100–599; anything else \`0\`). `
    + '`credential` is a credential set\'s id (`default` for the object form of `credentials`): one series per set on the per-token metrics only (docs/credential-sets.md). '
    + 'No label ever carries a path, query string, client address or secret.';
  return `${lines.join('\n')}\n\n${labelLine}\n`;
}

const region = readmeRegion(START, END);

/** The table currently between the README markers, or undefined when the markers are missing. */
export const readmeMetricsTable = (readme: string): string | undefined => region.read(readme);

/** `readme` with the region between the markers replaced by `table`. */
export const replaceReadmeMetricsTable = (readme: string, table: string): string => region.replace(readme, table);

/** "Buckets 10 ms … 30 s." for a histogram. */
function buckets(metric: MetricDefinition): string {
  const bounds = metric.buckets;
  if (metric.type !== 'histogram' || !bounds || bounds.length === 0) return '';
  return `Buckets ${duration(bounds[0]!)} … ${duration(bounds[bounds.length - 1]!)}.`;
}

function duration(seconds: number): string {
  return seconds < 1 ? `${+(seconds * 1000).toFixed(3)} ms` : `${seconds} s`;
}

/** "Start at 0: `listener` `proxy`, `admin`; `reason` ...": each label's values among the series created at 0. */
function startAtZero(metric: MetricDefinition): string {
  if (metric.perCredential) {
    const labels = metric.labels?.slice(0, -1) ?? [];
    const sets = metric.perCredential;
    const byLabel = labels.map((label, i) => `\`${label}\` ${[...new Set(sets.map((set) => set[i]!))].map(codeCell).join(', ')}`);
    return `Start at 0 for each credential set${byLabel.length ? `: ${byLabel.join('; ')}` : ''}.`;
  }
  const sets = metric.startAtZero;
  if (!sets?.length || !metric.labels?.length) return '';
  const byLabel = metric.labels.map((label, i) => `\`${label}\` ${[...new Set(sets.map((set) => set[i]!))].map(codeCell).join(', ')}`);
  return `Start at 0: ${byLabel.join('; ')}.`;
}

// `npm run docs:metrics` (node --import tsx src/observability/metrics-table.ts --write) regenerates the table in docs/metrics.md.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const readmePath = fileURLToPath(new URL('../../docs/metrics.md', import.meta.url));
  const table = renderMetricsTable();
  if (process.argv.includes('--write')) {
    writeFileSync(readmePath, replaceReadmeMetricsTable(readFileSync(readmePath, 'utf8'), table));
    process.stdout.write(`updated the metrics table in ${readmePath}\n`);
  } else {
    process.stdout.write(table);
  }
}
