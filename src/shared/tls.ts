import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { FileRefusedError, MAX_PEM_FILE_BYTES, readBoundedFileSync } from './bounded-file.js';
import { createRequire } from 'node:module';
import type { SecureContext } from 'node:tls';

/** A client certificate and key as a TLS context takes them (shared/client-certificate.ts checks them and decrypts the key once). */
export interface ClientCertificatePem {
  readonly certPem: string;
  /** The key without a passphrase: building a context never runs the key derivation again. */
  readonly contextKeyPem: string;
}

// node:tls through require, not an ES import: Node builds an ES module's view of a built-in by
// reading every export, and `tls.rootCertificates` is a getter that then copies Node's ~140 roots
// into strings held for the process's life (~300 KB of every sidecar's heap).
const tls = createRequire(import.meta.url)('node:tls') as typeof import('node:tls');

/**
 * Trusted CAs for an upstream: Node's roots plus the certificates of an extra PEM file. Passing
 * `ca` alone would replace the system store (docs/traps.md T10), so the roots are always included: the
 * TLS context starts from Node's default store (see trustContext). Node's roots are not copied
 * into JavaScript strings (`tls.rootCertificates`, ~300 KB kept for the process's life) unless an
 * API needs them as a list (`caCertificates`).
 */
export interface TrustedCas {
  /** The file the extra certificates came from, for messages. */
  readonly file: string;
  /** The extra file's text: PEM certificates only (checked on load). */
  readonly extraPem: string;
}

/** Reads and checks an extra CA file; undefined when none is configured (Node then uses its defaults). */
export function loadTrustedCas(caFile: string | undefined): TrustedCas | undefined {
  if (!caFile) return undefined;
  let extraPem: string;
  try {
    extraPem = readBoundedFileSync(caFile, MAX_PEM_FILE_BYTES);
  } catch (err) {
    throw new Error(`${caFile} ${err instanceof FileRefusedError ? err.reason : (err as Error).message}`);
  }
  const problem = pemCertificatesProblem(extraPem);
  if (problem) throw new Error(`${caFile} ${problem}`);
  return { file: caFile, extraPem };
}

/** The trusted CAs as one list of PEM strings, Node's roots first, for APIs that take a `ca` option. */
export function caCertificates(ca: TrustedCas): string[] {
  return [...tls.rootCertificates, ca.extraPem];
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[^-]*-----END CERTIFICATE-----/g;

/**
 * Why a CA file's text is not a list of certificates, or undefined. Every PEM block is parsed:
 * the armour alone proves nothing (a key, a CSR or a truncated paste pass a text search and then
 * fail, or are silently skipped, when the trust store is built).
 */
export function pemCertificatesProblem(text: string): string | undefined {
  const found = [...text.matchAll(PEM_CERTIFICATE)];
  const blocks = found.map((m) => m[0]);
  if (blocks.length === 0) return 'holds no PEM certificate (-----BEGIN CERTIFICATE----- ... -----END CERTIFICATE-----)';
  // OpenSSL reads a BEGIN line only at the start of a line: `cat a.pem b.pem` with no newline at
  // the end of a.pem glues b's BEGIN to a's END, and b is skipped without a word (docs/traps.md T103).
  // A byte-order mark before the first (a file saved by Notepad) is taken by OpenSSL too.
  const glued = found.findIndex((m) => m.index > 0 && text[m.index - 1] !== '\n' && !(m.index === 1 && text[0] === '\uFEFF'));
  if (glued >= 0) return `holds certificate ${glued + 1} of ${blocks.length} with its -----BEGIN CERTIFICATE----- not at the start of a line (glued to the certificate before it, as \`cat\` makes of a file without a last newline, or indented): OpenSSL would skip it; put it on a line of its own`;
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
 * One TLS context per set of trusted CAs, built once. Passing a `ca` array to every connection
 * makes Node rebuild the ~140-root trust store per handshake (~55 ms of CPU each, found by the
 * benchmark's profile); a shared context is built once at start-up.
 */
export function trustContext(ca: TrustedCas | undefined): SecureContext | undefined {
  if (!ca) return undefined;
  // The token client and the proxy engine share one TrustedCas: build its context once.
  let context = contexts.get(ca);
  if (!context) {
    context = buildContext(ca);
    contexts.set(ca, context);
  }
  return context;
}

/**
 * The context for a connection that also presents a client certificate (mutual TLS): the same
 * trust as {@link trustContext}, plus the pair. Built once per loaded pair (a reload makes a new
 * object, so new connections get the new pair and open ones keep theirs).
 */
export function tlsContext(ca: TrustedCas | undefined, identity: ClientCertificatePem | undefined): SecureContext | undefined {
  if (!identity) return trustContext(ca);
  const cached = identityContexts.get(identity);
  if (cached && cached.ca === ca) return cached.context;
  const native = tls.createSecureContext({ cert: identity.certPem, key: identity.contextKeyPem }) as SecureContext & { context?: { addCACert?: (pem: string) => void } };
  if (ca) {
    if (typeof native.context?.addCACert !== 'function') throw new Error('this Node cannot add a CA to a TLS context');
    const extra = nodeExtraCaCerts();
    if (extra) native.context.addCACert(extra);
    native.context.addCACert(ca.extraPem);
  }
  identityContexts.set(identity, { ca, context: native });
  return native;
}

const identityContexts = new WeakMap<ClientCertificatePem, { ca: TrustedCas | undefined; context: SecureContext }>();

/**
 * Node's default context loads the system roots natively; passing them as PEM strings makes Node
 * parse all ~140 again (~40 ms of start-up). So start from the default store and add only the
 * extra certificates (every one in the PEM text).
 */
function buildContext(ca: TrustedCas): SecureContext {
  const native = tls.createSecureContext() as SecureContext & { context?: { addCACert?: (pem: string) => void } };
  if (typeof native.context?.addCACert === 'function') {
    // Adding a CA gives the context a store of its own, made from Node's bundled roots only: the
    // certificates of NODE_EXTRA_CA_CERTS, which Node adds to its default store, would be lost.
    const extra = nodeExtraCaCerts();
    if (extra) native.context.addCACert(extra);
    native.context.addCACert(ca.extraPem);
    return native;
  }
  return tls.createSecureContext({ ca: caCertificates(ca) });
}

/**
 * The PEM text of NODE_EXTRA_CA_CERTS, which Node read at its start; undefined when unset or
 * unreadable (Node then printed its own warning and trusts without it too).
 */
function nodeExtraCaCerts(): string | undefined {
  const file = process.env.NODE_EXTRA_CA_CERTS;
  if (!file) return undefined;
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return undefined;
  }
}

const contexts = new WeakMap<TrustedCas, SecureContext>();
