// Types for the @prometheus-io/client files imported one by one in src/observability/prom-client-core.ts
// (the package ships types only for its entry point).
declare module '@prometheus-io/client/lib/registry.js' {
  import { Registry } from '@prometheus-io/client';
  export default Registry;
}
declare module '@prometheus-io/client/lib/counter.js' {
  import { Counter } from '@prometheus-io/client';
  export default Counter;
}
declare module '@prometheus-io/client/lib/gauge.js' {
  import { Gauge } from '@prometheus-io/client';
  export default Gauge;
}
declare module '@prometheus-io/client/lib/histogram.js' {
  import { Histogram } from '@prometheus-io/client';
  export default Histogram;
}
declare module '@prometheus-io/client/lib/metrics/*.js' {
  import type { Registry } from '@prometheus-io/client';
  /** One default metric: registers its collectors on `registry`. */
  const register: (registry: Registry, config: Record<string, unknown>) => void;
  export default register;
}
