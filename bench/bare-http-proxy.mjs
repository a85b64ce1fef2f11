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
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { Agent } from 'node:https';
import { createSecureContext, rootCertificates } from 'node:tls';
import httpProxy from 'http-proxy';

const target = process.env.UPSTREAM;
const caFile = process.env.CA_FILE;
if (!target || !caFile || !process.env.TOKEN || !process.env.API_KEY) {
  process.stderr.write('UPSTREAM, CA_FILE, TOKEN and API_KEY are required\n');
  process.exit(2);
}
// Same trust as the sidecar (system roots + the test CA), but as one prebuilt secure context:
// an Agent given `ca: [...rootCertificates, extra]` joins ~140 PEMs into its pool key on every
// request (https.Agent#getName, ~0.4 ms each here) and parses them again for every new socket
// (~55 ms), which would make this reference look far slower than http-proxy really is.
const secureContext = createSecureContext({ ca: [...rootCertificates, readFileSync(caFile, 'utf8')] });
const agent = new Agent({ keepAlive: true, maxSockets: 128, secureContext });
const proxy = httpProxy.createProxyServer({ target, agent, changeOrigin: true, secure: true });
const headers = { authorization: `Bearer ${process.env.TOKEN}`, apikey: process.env.API_KEY };
proxy.on('error', (_err, _req, res) => {
  if (res && 'headersSent' in res && !res.headersSent) {
    res.writeHead(502, { 'content-type': 'application/json' });
    res.end('{"message":"upstream error"}');
  } else res?.destroy();
});
const server = createServer((req, res) => proxy.web(req, res, { headers }));
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(JSON.stringify({ proxy: 'ready', port: server.address().port }) + '\n');
});
const stop = () => {
  server.close();
  server.closeAllConnections();
  agent.destroy();
  setTimeout(() => process.exit(0), 100).unref();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
