import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testTls } from './tls.js';

export interface TestUpstream {
  url: string;
  port: number;
  /** Requests (other than gentoken) whose connection or response has not closed yet. */
  readonly open: number;
  /** Every non-gentoken request seen. */
  readonly seen: Array<{ method: string; url: string; headers: IncomingMessage['headers'] }>;
  tokenRequests: number;
  /** Bodies of every gentoken request, in order. */
  readonly tokenBodies: string[];
  /** Resolves once `open` drops to `n` (bounded by the test's own timeout). */
  waitOpen(n: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * A programmable HTTPS service for fault tests: gentoken always succeeds with `tok-N`, every
 * other request goes to `handler`, and open requests are counted so a test can prove that a
 * client abort released the upstream request.
 */
export async function startUpstream(
  handler: (req: IncomingMessage, res: ServerResponse) => void,
  options: { ttlSeconds?: number; refreshToken?: 'absent' | null } = {},
): Promise<TestUpstream> {
  const tls = await testTls();
  let open = 0;
  const seen: TestUpstream['seen'] = [];
  const waiters: Array<{ n: number; resolve: () => void }> = [];
  const state = { tokenRequests: 0 };
  const tokenBodies: string[] = [];
  const settle = () => {
    for (const w of [...waiters]) if (open <= w.n) { waiters.splice(waiters.indexOf(w), 1); w.resolve(); }
  };
  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    if (req.url === '/pub/b2b/v1/auth/gentoken') {
      state.tokenRequests++;
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        tokenBodies.push(Buffer.concat(chunks).toString());
        res.writeHead(200, { 'content-type': 'application/json' });
        // `refreshToken: 'absent'`: the answer of a serialiser that drops null fields (Jackson NON_NULL).
        const refresh = options.refreshToken === 'absent' ? {} : { refreshToken: null };
        res.end(JSON.stringify({ token: `tok-${state.tokenRequests}-abcdef`, ...refresh, aliveSecondsTtl: options.ttlSeconds ?? 900 }));
      });
      return;
    }
    open++;
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    res.once('close', () => { open--; settle(); });
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://localhost:${port}`,
    port,
    get open() { return open; },
    seen,
    tokenBodies,
    get tokenRequests() { return state.tokenRequests; },
    set tokenRequests(v) { state.tokenRequests = v; },
    waitOpen: (n) => new Promise((resolve) => { waiters.push({ n, resolve }); settle(); }),
    close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
  };
}
