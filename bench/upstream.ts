/**
 * The benchmark's HTTPS upstream, in its own process: the B2B simulator (1 KiB JSON GET
 * `/pub/b2b/v1/json1k`, POST echo that hashes the body, streamed `download?bytes=N`, gentoken,
 * control API), keep-alive, certificate from `<dir>/{cert,key,ca}.pem`. Every configuration of
 * the benchmark hits this same server, so they all pay the same token and ApiKey validation.
 *
 *   node --import tsx bench/upstream.ts <dir> <ttlSeconds> <apiKey> <password>
 *
 * Prints one JSON line `{"upstream":"ready","port":N}` and serves until SIGTERM/SIGINT.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createB2bSimulator } from '../src/simulator/b2b-simulator.js';

const [dir, ttl, apiKey, password] = process.argv.slice(2);
if (!dir || !ttl || !apiKey || !password) {
  process.stderr.write('usage: upstream.ts <dir> <ttlSeconds> <apiKey> <password>\n');
  process.exit(2);
}
const tls = {
  caPem: readFileSync(join(dir, 'ca.pem'), 'utf8'),
  certPem: readFileSync(join(dir, 'cert.pem'), 'utf8'),
  keyPem: readFileSync(join(dir, 'key.pem'), 'utf8'),
};
const sim = createB2bSimulator({ apiKey, password, ttlSeconds: Number(ttl), tls, host: '127.0.0.1', port: 0 });
const { port } = await sim.start();
process.stdout.write(JSON.stringify({ upstream: 'ready', port }) + '\n');
const stop = () => void sim.stop().finally(() => process.exit(0));
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
