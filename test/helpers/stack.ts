import { request as httpRequest, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http';
import type { Clock } from '../../src/shared/clock.js';
import { validateConfig } from '../../src/config/validate-config.js';
import type { Config } from '../../src/config/schema.js';
import { fingerprint } from '../../src/shared/secrets.js';
import { createSidecar, type Sidecar } from '../../src/sidecar.js';
import { createB2bSimulator, type B2bSimulator } from '../../src/simulator/b2b-simulator.js';
import { createCaptureLogger, type CapturedLogger } from './capture-logger.js';
import { testTls } from './tls.js';

export const CREDENTIALS = { apiKey: 'test-api-key-0123456789', password: 'test-password-9876543210', rkObjectId: 'obj-42' };
export type Engine = Config['proxy']['engine'];
export const ENGINES: Engine[] = ['undici', 'http-proxy'];

export interface RunningSidecar {
  sidecar: Sidecar;
  port: number;
  adminPort: number;
  log: CapturedLogger;
  config: Config;
  stop(): Promise<void>;
}

type Raw = Record<string, unknown>;

/** Starts a real sidecar (port 0) in front of `baseUrl`, trusting the test CA through `caFile`. */
export async function startSidecar(options: { baseUrl: string; engine?: Engine; overrides?: Raw; clock?: Clock; random?: () => number; credentials?: Raw; env?: Record<string, string | undefined> }): Promise<RunningSidecar> {
  const tls = await testTls();
  const raw = merge({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    service: { baseUrl: options.baseUrl, caFile: tls.caFile },
    credentials: options.credentials ?? CREDENTIALS,
    proxy: { engine: options.engine ?? 'undici' },
  }, options.overrides ?? {});
  const config = validateConfig(raw);
  const log = createCaptureLogger();
  const sidecar = createSidecar(config, { logger: log.logger, secrets: log.secrets, ...(options.clock ? { clock: options.clock } : {}), ...(options.random ? { random: options.random } : {}), env: options.env ?? {} });
  const { port, adminPort } = await sidecar.start();
  return { sidecar, port, adminPort, log, config, stop: () => sidecar.stop() };
}

/** The simulated service with the test credentials and the test CA. */
export async function startSimulator(options: { ttlSeconds?: number; clock?: Clock } = {}): Promise<B2bSimulator & { baseUrl: string }> {
  const tls = await testTls();
  const sim = createB2bSimulator({ apiKey: CREDENTIALS.apiKey, password: CREDENTIALS.password, ttlSeconds: options.ttlSeconds ?? 900, tls, rkObjectId: CREDENTIALS.rkObjectId, ...(options.clock ? { clock: options.clock } : {}) });
  const { url } = await sim.start();
  return Object.assign(sim, { baseUrl: url });
}

/** Waits until the sidecar holds a token (bounded). */
export async function waitReady(s: RunningSidecar, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!s.sidecar.tokens?.current()) {
    if (Date.now() > deadline) throw new Error('sidecar did not obtain a token in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  json<T = Record<string, unknown>>(): T;
}

/** One plain HTTP request to a local listener, with full control over headers and body. */
export function send(port: number, options: { method?: string; path?: string; headers?: OutgoingHttpHeaders; body?: Buffer | string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method: options.method ?? 'GET', path: options.path ?? '/', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: <T>() => JSON.parse(body.toString()) as T });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** What the simulator's echo shows for a credential header value. */
export function echoed(value: string): string {
  return `sha256:${fingerprint(value)}`;
}

function merge(base: Raw, extra: Raw): Raw {
  const out: Raw = { ...base };
  for (const [k, v] of Object.entries(extra)) {
    out[k] = v && typeof v === 'object' && !Array.isArray(v) && out[k] && typeof out[k] === 'object' ? merge(out[k] as Raw, v as Raw) : v;
  }
  return out;
}
