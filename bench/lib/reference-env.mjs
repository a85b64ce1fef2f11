// What the bare reference proxies (bench/bare-*.mjs) read from their environment: the upstream,
// its trust and the static credential headers. Plain .mjs so the references run without a loader.
import { readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates } from 'node:tls';

const target = process.env.UPSTREAM;
const caFile = process.env.CA_FILE;
if (!target || !caFile || !process.env.TOKEN || !process.env.API_KEY) {
  process.stderr.write('UPSTREAM, CA_FILE, TOKEN and API_KEY are required\n');
  process.exit(2);
}

export { target };
// Same trust as the sidecar (system roots + the test CA), but as one prebuilt secure context:
// an https.Agent given `ca: [...rootCertificates, extra]` joins ~140 PEMs into its pool key on
// every request (Agent#getName, ~0.4 ms each here) and parses them again for every new socket
// (~55 ms), which would make a reference look far slower than its engine really is.
export const secureContext = createSecureContext({ ca: [...rootCertificates, readFileSync(caFile, 'utf8')] });
export const credentialHeaders = { authorization: `Bearer ${process.env.TOKEN}`, apikey: process.env.API_KEY };

/** Listens on a free loopback port and prints the line the benchmark waits for. */
export function listenAndAnnounce(server) {
  // Exit normally on SIGTERM (the default is death by signal), so `--cpu-prof` writes its profile.
  process.once('SIGTERM', () => process.exit(0));
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ proxy: 'ready', port: server.address().port }) + '\n');
  });
}
