import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';

/**
 * Trusted CAs for an upstream: Node's roots plus an optional extra PEM file. Passing `ca` alone
 * would replace the system store (PITFALLS 10), so the roots are always included.
 * Returns undefined when no extra CA is configured (Node then uses its defaults).
 */
export function loadTrustedCas(caFile: string | undefined): string[] | undefined {
  if (!caFile) return undefined;
  const extra = readFileSync(caFile, 'utf8');
  const problem = pemCertificatesProblem(extra);
  if (problem) throw new Error(`${caFile} ${problem}`);
  return [...rootCertificates, extra];
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----/g;

/**
 * Why a CA file's text is not a list of certificates, or undefined. Every PEM block is parsed:
 * the armour alone proves nothing (a key, a CSR or a truncated paste pass a text search and then
 * fail, or are silently skipped, when the trust store is built).
 */
export function pemCertificatesProblem(text: string): string | undefined {
  const blocks = text.match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) return 'holds no PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)';
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (err) {
      const which = blocks.length === 1 ? 'its certificate' : `certificate ${i + 1} of ${blocks.length}`;
      return `holds PEM armour, but ${which} is not an X.509 certificate (${(err as { code?: string }).code ?? 'unparsable'})`;
    }
  }
  return undefined;
}

/**
 * One TLS context for a list of CAs, built once. Passing a `ca` array to every connection makes
 * Node rebuild the ~140-root trust store per handshake (~55 ms of CPU each, found by the
 * benchmark's profile); a shared context is built once at start-up.
 */
export function trustContext(ca: string[] | undefined): SecureContext | undefined {
  if (!ca) return undefined;
  // The token client and the proxy engine share one CA list: build its context once.
  let context = contexts.get(ca);
  if (!context) {
    context = buildContext(ca);
    contexts.set(ca, context);
  }
  return context;
}

/**
 * Node's default context loads the system roots natively (~2 ms); passing them as PEM strings
 * makes Node parse all ~140 again (~40 ms of start-up). So when the list is "roots + extras"
 * (what loadTrustedCas returns), start from the default store and add only the extras.
 */
function buildContext(ca: string[]): SecureContext {
  const roots = rootCertificates.length;
  const native = createSecureContext() as SecureContext & { context?: { addCACert?: (pem: string) => void } };
  if (ca.length > roots && ca[0] === rootCertificates[0] && typeof native.context?.addCACert === 'function') {
    for (const pem of ca.slice(roots)) native.context.addCACert(pem);
    return native;
  }
  return createSecureContext({ ca });
}

const contexts = new WeakMap<string[], SecureContext>();
