import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { testTls } from './tls.js';

/** One protected request as the vendor saw it: which key its token was issued for, and what it presented. */
export interface SeenRequest {
  url: string;
  apiKey: string | undefined;
  token: string | undefined;
  /** The key the presented token was issued for (undefined: not a token of this vendor). */
  tokenKey: string | undefined;
  headers: IncomingMessage['headers'];
  status: number;
}

/**
 * A vendor that knows several ApiKeys (credential sets, docs/credential-sets.md): gentoken issues a
 * token for the key and password presented, and a protected request passes only with a token
 * issued for the very ApiKey it carries, not revoked. `/pub/b2b/v1/redirect` answers 302 to
 * `/pub/b2b/v1/whoami` (an absolute path), for the Location rewrite under a path prefix.
 */
export interface SetVendor {
  url: string;
  readonly seen: SeenRequest[];
  /** Tokens issued, by key, in order. */
  readonly issued: Map<string, string[]>;
  /** Gentoken calls, by key (refused ones too). */
  readonly gentokenCalls: Map<string, number>;
  /** Changes a key's password: the old one is refused from now on. */
  setPassword(apiKey: string, password: string): void;
  /** Refuses every gentoken call for this key (401). */
  refuse(apiKey: string): void;
  /** Revokes a token: protected requests with it get 401. */
  revoke(token: string): void;
  close(): Promise<void>;
}

export async function startSetVendor(keys: Record<string, string>): Promise<SetVendor> {
  const tls = await testTls();
  const passwords = new Map(Object.entries(keys));
  const refused = new Set<string>();
  const revoked = new Set<string>();
  const owner = new Map<string, string>();
  const issued = new Map<string, string[]>();
  const gentokenCalls = new Map<string, number>();
  const seen: SeenRequest[] = [];
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const apiKey = typeof req.headers.apikey === 'string' ? req.headers.apikey : undefined;
      const url = req.url ?? '/';
      if (url.startsWith('/pub/b2b/v1/auth/gentoken')) {
        if (apiKey) gentokenCalls.set(apiKey, (gentokenCalls.get(apiKey) ?? 0) + 1);
        let password: unknown;
        try {
          password = (JSON.parse(Buffer.concat(chunks).toString()) as { password?: unknown }).password;
        } catch {
          password = undefined;
        }
        if (!apiKey || refused.has(apiKey) || passwords.get(apiKey) !== password) return json(res, 401, { message: 'Invalid ApiKey or password' });
        const token = randomBytes(24).toString('base64url');
        owner.set(token, apiKey);
        issued.set(apiKey, [...(issued.get(apiKey) ?? []), token]);
        return json(res, 200, { token, refreshToken: null, aliveSecondsTtl: 900 });
      }
      const auth = req.headers.authorization;
      const token = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
      const tokenKey = token === undefined ? undefined : owner.get(token);
      const ok = token !== undefined && tokenKey !== undefined && tokenKey === apiKey && !revoked.has(token);
      const status = !ok ? 401 : url.startsWith('/pub/b2b/v1/redirect') ? 302 : 200;
      seen.push({ url, apiKey, token, tokenKey, headers: req.headers, status });
      if (status === 401) return json(res, 401, { message: 'Unauthorized' });
      if (status === 302) return json(res, 302, { message: 'moved' }, { location: '/pub/b2b/v1/whoami' });
      return json(res, 200, { apiKey, url });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `https://localhost:${port}`,
    seen,
    issued,
    gentokenCalls,
    setPassword: (apiKey, password) => void passwords.set(apiKey, password),
    refuse: (apiKey) => void refused.add(apiKey),
    revoke: (token) => void revoked.add(token),
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
