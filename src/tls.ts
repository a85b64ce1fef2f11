import { readFileSync } from 'node:fs';
import { rootCertificates } from 'node:tls';

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
