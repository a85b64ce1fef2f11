/**
 * The prom-client classes the sidecar uses, imported file by file: the package entry point also
 * loads the Pushgateway client (http, https, zlib), the cluster aggregator and Summary's t-digest,
 * ~15 ms of start-up on one core that nothing here uses. prom-client declares no "exports" map;
 * these are the same module instances its entry point re-exports.
 */
import CounterClass from 'prom-client/lib/counter.js';
import collectDefaultMetricsFn from 'prom-client/lib/defaultMetrics.js';
import GaugeClass from 'prom-client/lib/gauge.js';
import HistogramClass from 'prom-client/lib/histogram.js';
import RegistryClass from 'prom-client/lib/registry.js';

export const Counter = CounterClass;
export const Gauge = GaugeClass;
export const Histogram = HistogramClass;
export const Registry = RegistryClass;
export const collectDefaultMetrics = collectDefaultMetricsFn;
