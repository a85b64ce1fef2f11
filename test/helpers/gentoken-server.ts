import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../src/observability/logger.js';
import { testTls } from './tls.js';

/** One request the server received, recorded before it is answered. */
export interface RecordedRequest {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** How to answer: a status and body (objects are sent as JSON), or `hang` to never answer. */
export interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  hang?: boolean;
  /** Send a 103 Early Hints interim response first. */
  earlyHints?: boolean;
}

export type Responder = (req: RecordedRequest, index: number) => Reply | Promise<Reply>;

/** A tiny scriptable HTTPS gentoken server on 127.0.0.1:0, certified by the test CA. */
export interface GentokenServer {
  /** `https://localhost:<port>` — a baseUrl for the token client. */
  readonly url: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  /** Replaced freely by tests; the default issues `tok-<n>` with a 900 s lifetime. */
  respond: Responder;
  /** Resolves when the server has received `count` requests in total. */
  received(count: number): Promise<void>;
  close(): Promise<void>;
}

/** A 200 AuthResult with the given token and lifetime. */
export function ok(token: string, aliveSecondsTtl: number): Reply {
  return { status: 200, body: { token, refreshToken: null, aliveSecondsTtl } };
}

/** Starts a gentoken server; `tls` defaults to the per-process test certificate. */
export async function startGentokenServer(
  respond?: Responder,
  tls?: { certPem: string; keyPem: string },
): Promise<GentokenServer> {
  const material = tls ?? (await testTls());
  const requests: RecordedRequest[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server: Server = createServer({ cert: material.certPem, key: material.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const recorded = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString() };
      const index = requests.push(recorded) - 1;
      for (const w of waiters.filter((w) => requests.length >= w.count)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
      void Promise.resolve(api.respond(recorded, index)).then((reply) => {
        if (reply.hang) return;
        if (reply.earlyHints) res.writeEarlyHints({ link: '</style.css>; rel=preload; as=style' });
        const body = typeof reply.body === 'string' || reply.body === undefined ? (reply.body ?? '') : JSON.stringify(reply.body);
        res.writeHead(reply.status ?? 200, { 'content-type': 'application/json', ...reply.headers });
        res.end(body);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const api: GentokenServer = {
    url: `https://localhost:${port}`,
    port,
    requests,
    respond: respond ?? ((_req, i) => ok(`tok-${i + 1}`, 900)),
    received(count) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return api;
}

/**
 * A JSON-lines logger whose lines are kept in memory, deliberately without any redaction (no key
 * blanking, no secret scrubbing): a test that finds no secret here proves the code never handed
 * one to its logger.
 */
export function captureLogger(): { logger: Logger; lines: string[]; text(): string } {
  const lines: string[] = [];
  const method = (level: string) => (message: string | Error, ...args: unknown[]) => {
    const fields = Object.assign({}, ...args.filter((a) => a && typeof a === 'object'));
    lines.push(JSON.stringify({ level, message: message instanceof Error ? message.message : message, ...(message instanceof Error ? { stack: message.stack } : {}), ...fields }));
  };
  const logger: Logger = { level: 'debug', error: method('error'), warn: method('warn'), info: method('info'), debug: method('debug') };
  return { logger, lines, text: () => lines.join('\n') };
}
