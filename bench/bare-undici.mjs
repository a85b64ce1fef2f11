/**
 * The Node floor for this design: a plain `http` server handing each request to an undici `Pool`
 * through `dispatch()` (keep-alive, CA verified) with static Authorization + ApiKey headers, the
 * answer written straight back. None of the sidecar's features; it shows how much of the
 * sidecar's cost and latency any Node proxy on undici pays anyway.
 *
 *   UPSTREAM=https://127.0.0.1:N CA_FILE=ca.pem TOKEN=... API_KEY=... node bench/bare-undici.mjs
 *
 * Prints one JSON line `{"proxy":"ready","port":N}`; SIGTERM stops it.
 */
import { createServer } from 'node:http';
import { Pool } from 'undici';
import { credentialHeaders as auth, listenAndAnnounce, secureContext, target } from './lib/reference-env.mjs';

const pool = new Pool(target, { connections: 128, pipelining: 1, connect: { secureContext } });
const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding']);

const server = createServer((req, res) => {
  const { host, connection, ...headers } = req.headers;
  let chunks;
  pool.dispatch({ method: req.method, path: req.url, headers: { ...headers, ...auth }, body: req.method === 'GET' || req.method === 'HEAD' ? null : req }, {
    onConnect() {},
    onHeaders(status, raw) {
      const out = [];
      for (let i = 0; i < raw.length; i += 2) {
        const name = raw[i].toString('latin1');
        if (!HOP.has(name.toLowerCase())) out.push(name, raw[i + 1].toString('latin1'));
      }
      res.writeHead(status, out);
      return true;
    },
    onData(chunk) {
      (chunks ??= []).push(chunk);
      return true;
    },
    onComplete() {
      if (chunks?.length === 1) return void res.end(chunks[0]);
      for (const chunk of chunks ?? []) res.write(chunk);
      res.end();
    },
    onError() {
      if (res.headersSent) res.destroy();
      else res.writeHead(502, { 'content-type': 'application/json' }).end('{"message":"upstream error"}');
    },
  });
});
listenAndAnnounce(server);
