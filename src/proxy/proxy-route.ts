/**
 * What the request path's three parts (admit, forward, respond) share: the route a request goes
 * to and the metric hooks they call. Types only.
 */
import type { Metrics, RouteName } from '../observability/metrics.js';
import type { ProxyEngine } from '../upstream/engine.js';
import type { CredentialSource } from './route-credentials.js';

export type { RouteName } from '../observability/metrics.js';

/** One upstream the listener forwards to. Routes are matched by path prefix, longest first. */
export interface ProxyRoute {
  name: RouteName;
  /** Path prefix ('' matches everything); stripped before forwarding. */
  prefix: string;
  engine: ProxyEngine;
  /** Allowed methods; undefined allows all. */
  methods?: ReadonlySet<string>;
  credentials: CredentialSource;
  /** Lower-case client header names removed before the route's own are attached. */
  stripHeaders: ReadonlySet<string>;
  stripQuery: ReadonlySet<string>;
  stripCookies: ReadonlySet<string>;
  /** The credential set whose token the route attaches (a service route); B2B-Credential may name only it. */
  credential?: string;
  /** Maps a response's `Location` (e.g. an upstream redirect) back under this route. */
  rewriteLocation?(location: string): string;
}

/** The metric hooks the proxy calls: a part of the metrics module's contract, not a copy of it. */
export type ProxyMetrics = Pick<Metrics,
  'requestStarted' | 'responseStarted' | 'requestEnded' | 'guardDenied' | 'upstreamUnauthorized' |
  'upstreamRetried' | 'replayCaptureDropped' | 'localResponse'>;
