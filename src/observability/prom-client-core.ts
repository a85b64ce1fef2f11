/**
 * The classes of the Prometheus client for Node.js (`@prometheus-io/client`, the continuation of
 * prom-client under the Prometheus organisation) that the sidecar uses, imported file by file: the
 * package entry point also loads the Pushgateway client (http, https, zlib), the cluster aggregator
 * and Summary's t-digest, start-up that nothing here uses. The package declares no "exports" map;
 * these are the same module instances its entry point re-exports. (The file keeps its prom-client
 * name so that imports stay put.)
 */
import CounterClass from '@prometheus-io/client/lib/counter.js';
import GaugeClass from '@prometheus-io/client/lib/gauge.js';
import HistogramClass from '@prometheus-io/client/lib/histogram.js';
import RegistryClass from '@prometheus-io/client/lib/registry.js';
import eventLoopLag from '@prometheus-io/client/lib/metrics/eventLoopLag.js';
import gc from '@prometheus-io/client/lib/metrics/gc.js';
import heapSizeAndUsed from '@prometheus-io/client/lib/metrics/heapSizeAndUsed.js';
import heapSpacesSizeAndUsed from '@prometheus-io/client/lib/metrics/heapSpacesSizeAndUsed.js';
import osMemoryHeap from '@prometheus-io/client/lib/metrics/osMemoryHeap.js';
import processCpuTotal from '@prometheus-io/client/lib/metrics/processCpuTotal.js';
import processHandles from '@prometheus-io/client/lib/metrics/processHandles.js';
import processMaxFileDescriptors from '@prometheus-io/client/lib/metrics/processMaxFileDescriptors.js';
import processOpenFileDescriptors from '@prometheus-io/client/lib/metrics/processOpenFileDescriptors.js';
import processRequests from '@prometheus-io/client/lib/metrics/processRequests.js';
import processResources from '@prometheus-io/client/lib/metrics/processResources.js';
import processStartTime from '@prometheus-io/client/lib/metrics/processStartTime.js';
import version from '@prometheus-io/client/lib/metrics/version.js';
import type { Registry as RegistryType } from '@prometheus-io/client';

export const Counter = CounterClass;
export const Gauge = GaugeClass;
export const Histogram = HistogramClass;
export const Registry = RegistryClass;

/**
 * The client's default process metrics, in its order, registered on `register` only (never on the
 * client's global registry). The client's own `collectDefaultMetrics` adds one more since it left
 * prom-client: event-loop utilisation as a Summary and a Histogram, sampled by a 100 ms interval
 * timer for the life of the process (ten wake-ups a second of an idle sidecar, and t-digest's code
 * and memory) — left out, so the exposition is what it was (test/observability/exposition.test.ts).
 */
export function collectDefaultMetrics(config: { register: RegistryType }): void {
  const options = { eventLoopMonitoringPrecision: 10, ...config };
  for (const collect of [
    processCpuTotal, processStartTime, osMemoryHeap, processOpenFileDescriptors, processMaxFileDescriptors,
    eventLoopLag, processResources, processHandles, processRequests, heapSizeAndUsed, heapSpacesSizeAndUsed, version, gc,
  ]) collect(config.register, options);
}
