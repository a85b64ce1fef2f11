// What the bare reference proxies (bench/bare-*.mjs) read from their environment: the upstream,
// its trust and the static credential headers. Plain .mjs so the references run without a loader.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

// Required, not imported: an ES import of node:tls copies Node's roots into strings held for life
// (the sidecar's finding 26), which the lean floor below must not pay.
const tls = createRequire(import.meta.url)('node:tls');

const target = process.env.UPSTREAM;
const caFile = process.env.CA_FILE;
if (!target || !caFile || !process.env.TOKEN || !process.env.API_KEY) {
  process.stderr.write('UPSTREAM, CA_FILE, TOKEN and API_KEY are required\n');
  process.exit(2);
}

export { target };

/** Where a built dist/ keeps its modules: dist/lib/, or dist/ itself in builds from before finding 31 (--dist runs those too). */
export function sidecarModules(dist) {
  return existsSync(`${dist}/lib`) ? `${dist}/lib` : dist;
}

// SIDECAR_DIST (a built dist/ directory): the floor with the sidecar's own process settings, so
// its memory and start-up are what any proxy pays for the same job: the trust store built the
// sidecar's way (shared/tls.js) and, once every module is loaded, its V8 tuning (shared/v8-tuning.js).
const dist = process.env.SIDECAR_DIST && sidecarModules(process.env.SIDECAR_DIST);
const sidecarTls = dist ? await import(`${dist}/shared/tls.js`) : undefined;

// Same trust as the sidecar (system roots + the test CA), but as one prebuilt secure context:
// an https.Agent given `ca: [...rootCertificates, extra]` joins ~140 PEMs into its pool key on
// every request (Agent#getName, ~0.4 ms each here) and parses them again for every new socket
// (~55 ms), which would make a reference look far slower than its engine really is.
export const secureContext = sidecarTls
  ? sidecarTls.trustContext(sidecarTls.loadTrustedCas(caFile))
  : tls.createSecureContext({ ca: [...tls.rootCertificates, readFileSync(caFile, 'utf8')] });
if (dist) (await import(`${dist}/shared/v8-tuning.js`)).tuneV8ForServing();
export const credentialHeaders = { authorization: `Bearer ${process.env.TOKEN}`, apikey: process.env.API_KEY };

/** Listens on a free loopback port and prints the line the benchmark waits for. */
export function listenAndAnnounce(server) {
  // Exit normally on SIGTERM (the default is death by signal), so `--cpu-prof` writes its profile.
  process.once('SIGTERM', () => process.exit(0));
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ proxy: 'ready', port: server.address().port }) + '\n');
  });
}
