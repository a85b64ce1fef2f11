import type { Registry } from '@prometheus-io/client';
import type { MetricDefinition, Scrape } from './metric-definitions.js';
import { Counter, Gauge, Histogram } from './prom-client-core.js';
import { RequestSeries } from './request-series.js';

/** The handle registration gives for a definition: what its typed hook records through. */
type Handle<D> = D extends { requestSeries: true } ? RequestSeries
  : D extends { type: 'counter' } ? InstanceType<typeof Counter<string>>
  : D extends { type: 'histogram' } ? InstanceType<typeof Histogram<string>>
  : InstanceType<typeof Gauge<string>>;
export type Handles<T> = { readonly [K in keyof T]: Handle<T[K]> };

/**
 * Registers every metric of `table` on `registry`, in the table's order: its series listed as
 * starting at 0 are created at 0, a scrape-time gauge reads `scrape()` (taken once per scrape, so
 * the gauges of one scrape agree), and the request series share one RequestSeries (plain numbers
 * on the hot path). Returns a handle per key.
 */
export function registerMetrics<T extends Record<string, MetricDefinition>>(registry: Registry, table: T, scrape?: () => Scrape): Handles<T> {
  const registers = [registry];
  const read = oncePerScrape(() => {
    if (!scrape) throw new Error('registerMetrics: a scrape-time gauge needs a scrape source');
    return scrape();
  });
  let series: RequestSeries | undefined;
  const handles: Record<string, unknown> = {};
  for (const [key, def] of Object.entries(table)) {
    if (((def.startAtZero ?? def.perCredential) && def.type !== 'counter') || ((def.read ?? def.readEach) && def.type !== 'gauge')) {
      throw new Error(`registerMetrics: ${def.name}: startAtZero is for counters, read and readEach for gauges`);
    }
    const options = { name: def.name, help: def.help, labelNames: [...(def.labels ?? [])] };
    if (def.requestSeries) {
      series ??= new RequestSeries(Object.values(table).find((d) => d.requestSeries && d.buckets)?.buckets ?? []);
      if (def.type === 'histogram') series.registerHistogram(registry, options);
      else series.registerCounter(registry, options);
      handles[key] = series;
    } else if (def.type === 'counter') {
      const counter = new Counter({ ...options, registers });
      for (const labels of def.startAtZero ?? []) counter.labels(...labels).inc(0);
      handles[key] = counter;
    } else if (def.type === 'histogram') {
      handles[key] = new Histogram({ ...options, buckets: [...(def.buckets ?? [])], registers });
    } else {
      const { read: value, readEach } = def;
      handles[key] = new Gauge<string>({
        ...options, registers,
        ...(value ? { collect() { this.set(value(read())); } } : {}),
        ...(readEach ? {
          collect() {
            this.reset();
            for (const [labels, v] of readEach(read())) this.labels(...labels).set(v);
          },
        } : {}),
      });
    }
  }
  return handles as Handles<T>;
}

/**
 * `take()` once per scrape: the registry calls every metric's collect in one synchronous pass, so
 * the value is kept until the next microtask.
 */
function oncePerScrape(take: () => Scrape): () => Scrape {
  let taken: Scrape | undefined;
  return () => {
    if (taken === undefined) {
      taken = take();
      queueMicrotask(() => { taken = undefined; });
    }
    return taken;
  };
}
