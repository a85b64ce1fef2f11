/**
 * The "engine alone" reference: http-proxy 1.18.1 behind a plain `http` server, a keep-alive
 * https.Agent to the upstream (CA verified, SNI and Host of the upstream) and a static
 * Authorization + ApiKey header — none of the sidecar's features (guard, target checks,
 * metrics, 401 replay, hop-by-hop stripping, token lifecycle). Plain .mjs so no loader runs.
 *
 *   UPSTREAM=https://127.0.0.1:N CA_FILE=ca.pem TOKEN=... API_KEY=... node bench/bare-http-proxy.mjs
 *
 * Prints one JSON line `{"proxy":"ready","port":N}`; SIGTERM stops it.
 */
import { createServer } from 'node:http';
import { Agent } from 'node:https';
import httpProxy from '@podium/node-http-proxy';
import { credentialHeaders as headers, listenAndAnnounce, secureContext, target } from './lib/reference-env.mjs';

const agent = new Agent({ keepAlive: true, maxSockets: 128, secureContext });
const proxy = httpProxy.createProxyServer({ target, agent, changeOrigin: true, secure: true });
proxy.on('error', (_err, _req, res) => {
  if (res && 'headersSent' in res && !res.headersSent) {
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end('{"message":"upstream error"}');
  } else res?.destroy();
});
const server = createServer((req, res) => proxy.web(req, res, { headers }));
listenAndAnnounce(server);
