/**
 * The answer to a diagnostic probe: `doctor` beside a running sidecar probes through it, and
 * prints what the service answered for an operator to paste into a support ticket. A service (or
 * a gateway, or a debug build) that echoes the request's credentials would put the token this
 * sidecar attached into that report, a token doctor never saw and so cannot scrub. A request
 * carrying {@link DIAGNOSTIC_HEADER} therefore gets the service's answer with every secret this
 * sidecar holds, and every piece of one, removed from its headers and body
 * (`SecretSet.redactFragments`), and says so in the same header on the answer; the request
 * header itself never goes upstream (hop-by-hop.ts). docs/security.md, "What doctor prints".
 */
import type { ServerResponse } from 'node:http';
import type { UpstreamResponse } from '../upstream/engine.js';

/** The request header that asks for a redacted answer, and the answer's header that confirms it. */
export const DIAGNOSTIC_HEADER = 'b2b-sidecar-diagnostic';
/** The answer's {@link DIAGNOSTIC_HEADER}: redacted, with the body passed (redacted) or dropped. */
export const DIAGNOSTIC_REDACTED = 'redacted';
export const DIAGNOSTIC_BODY_DROPPED = 'redacted; body dropped';

/** Largest body a diagnostic answer passes on (doctor reads 16 KiB); a larger one is dropped. */
const MAX_DIAGNOSTIC_BODY = 64 * 1024;

/**
 * Writes `upstream`'s answer with `redact` applied to every header value and to the body; a
 * header whose name holds a secret is left out. A body that is larger than the bound, or encoded
 * (compressed bytes cannot be scrubbed), is dropped. Resolves when the answer is written.
 */
export async function writeDiagnosticAnswer(res: ServerResponse, upstream: UpstreamResponse, headers: Record<string, string | string[]>, redact: (text: string) => string): Promise<void> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    if (name === 'content-length' || redact(name) !== name) continue;
    const value = headers[name]!;
    out[name] = Array.isArray(value) ? value.map(redact) : redact(value);
  }
  const encoding = headers['content-encoding'];
  const encoded = encoding !== undefined && encoding !== 'identity';
  const body = encoded ? (upstream.body.destroy(), undefined) : await upstream.body.readAll(MAX_DIAGNOSTIC_BODY);
  if (body === undefined) delete out['content-encoding'];
  out[DIAGNOSTIC_HEADER] = body === undefined ? DIAGNOSTIC_BODY_DROPPED : DIAGNOSTIC_REDACTED;
  res.writeHead(upstream.status, out);
  res.end(body === undefined ? undefined : redact(body.toString('utf8')));
}
