import type { ProxyMetrics } from '../../src/proxy/proxy-handler.js';

/** Proxy metric hooks that record nothing, for handler tests that do not look at metrics. */
export const NO_METRICS: ProxyMetrics = {
  requestStarted() {}, responseStarted() {}, requestEnded() {}, guardDenied() {}, upstreamUnauthorized() {},
  upstreamRetried() {}, replayCaptureDropped() {}, localResponse() {},
};
