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
  if (!extra.includes('-----BEGIN CERTIFICATE-----')) {
    throw new Error(`${caFile} holds no PEM certificate`);
  }
  return [...rootCertificates, extra];
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
