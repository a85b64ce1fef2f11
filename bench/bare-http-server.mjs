/**
 * The connection-memory reference (bench/connections.ts): a bare Node `http` server with the
 * sidecar listener's settings (keep-alive 5 s, header and request timeouts, header size cap, no
 * Nagle, the connection cap raised) answering a 1 KiB JSON body itself. What any Node HTTP server
 * pays per open client connection. Plain .mjs so no loader runs.
 *
 *   MAX_CONNECTIONS=12000 node bench/bare-http-server.mjs
 *
 * Prints one JSON line `{"server":"ready","port":N}`; SIGTERM stops it.
 */
import { createServer } from 'node:http';

const body = JSON.stringify({ data: 'x'.repeat(1000) });
const server = createServer({
  requestTimeout: 300_000, headersTimeout: 20_000, connectionsCheckingInterval: 1000,
  maxHeaderSize: 16_384, keepAliveTimeout: 5000, noDelay: true, requireHostHeader: true,
}, (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.maxHeadersCount = 0;
server.maxConnections = Number(process.env.MAX_CONNECTIONS ?? 12_000);
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ server: 'ready', port: server.address().port }) + '\n'));
process.once('SIGTERM', () => process.exit(0));
