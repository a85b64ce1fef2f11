import type { Registry } from '@prometheus-io/client';

/** One label set's totals: observations per bucket (not cumulative; the last slot is above every bound), their sum and count. */
export interface Series {
  readonly labels: Readonly<Record<string, string>>;
  readonly perBucket: Float64Array;
  sum: number;
  count: number;
}

/** What the Prometheus client's registry reads of a metric: its own Counter and Histogram give the same shape. */
interface ExportedValue { labels: Record<string, string | number>; value: number; metricName?: string }

/**
 * A request counter and a latency histogram over the same label sets, kept in plain numbers:
 * The client's labelled `observe()` and `inc()` build a label object, validate it and hash it to
 * a string on every call, ~1.5 µs per proxied request together (finding 25). Here a request adds
 * to the series its caller looked up once, and the registry reads the totals at scrape time in
 * the exact form the client's own Counter and Histogram export them (checked against them in
 * test/observability/request-series.test.ts).
 */
export class RequestSeries {
  readonly #bounds: readonly number[];
  #series: Series[] = [];
  /** By the caller's numeric key for a label set: no string or label object per request. */
  #byKey = new Map<number, Series>();

  constructor(bounds: readonly number[]) {
    this.#bounds = [...bounds].sort((a, b) => a - b);
  }

  /** The series added under the caller's numeric `key` for its label set, if any. */
  get(key: number): Series | undefined {
    return this.#byKey.get(key);
  }

  /** A new label set under `key`, exported from now on (in the order added, as the client's own metrics do). */
  add(key: number, labels: Readonly<Record<string, string>>): Series {
    const series: Series = { labels, perBucket: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
    this.#series.push(series);
    this.#byKey.set(key, series);
    return series;
  }

  /** Records one observation; `value` must be finite (the caller clamps). */
  observe(series: Series, value: number): void {
    const bounds = this.#bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    series.perBucket[i]!++;
    series.sum += value;
    series.count++;
  }

  /** Registers the count of every series as a counter named `name`. */
  registerCounter(registry: Registry, options: { name: string; help: string; labelNames: readonly string[] }): void {
    this.#register(registry, { ...options, type: 'counter' }, () => this.#series.map((s) => ({ labels: { ...s.labels }, value: s.count })));
  }

  /** Registers the series as a histogram named `name` (`_bucket`, `_sum`, `_count`). */
  registerHistogram(registry: Registry, options: { name: string; help: string; labelNames: readonly string[] }): void {
    const bounds = this.#bounds;
    this.#register(registry, { ...options, type: 'histogram', upperBounds: [...bounds] }, () => {
      const values: ExportedValue[] = [];
      const bucket = `${options.name}_bucket`;
      for (const s of this.#series) {
        let cumulative = 0;
        for (let i = 0; i < bounds.length; i++) {
          cumulative += s.perBucket[i]!;
          values.push({ labels: { le: bounds[i]!, ...s.labels }, value: cumulative, metricName: bucket });
        }
        values.push(
          { labels: { le: '+Inf', ...s.labels }, value: s.count, metricName: bucket },
          { labels: { ...s.labels }, value: s.sum, metricName: `${options.name}_sum` },
          { labels: { ...s.labels }, value: s.count, metricName: `${options.name}_count` },
        );
      }
      return values;
    });
  }

  #register(
    registry: Registry,
    info: { name: string; help: string; type: 'counter' | 'histogram'; labelNames: readonly string[]; upperBounds?: number[] },
    values: () => ExportedValue[],
  ): void {
    const metric = {
      ...info,
      aggregator: 'sum',
      // `metric.name`, not the name given: an OpenMetrics registry renames counters (drops `_total`).
      get: async () => ({ name: metric.name, help: info.help, type: info.type, values: values(), aggregator: 'sum' }),
      // As the client's reset(): the label sets go too, and come back with their next request.
      reset: () => {
        this.#series = [];
        this.#byKey = new Map();
      },
    };
    registry.registerMetric(metric as unknown as Parameters<Registry['registerMetric']>[0]);
  }
}
