import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { FileRefusedError, MAX_PEM_FILE_BYTES, MAX_SECRET_FILE_BYTES, readBoundedFile, readBoundedFileSync } from './bounded-file.js';
import { pemCertificatesProblem } from './tls.js';

/** Where a client certificate and its key come from (`service.certFile`, ... under one prefix). */
export interface ClientCertificateFiles {
  /** The config prefix for messages: `service` or `localization`. */
  readonly key: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly keyPassphraseFile?: string | undefined;
}

/** A checked certificate and key, ready for a TLS context. */
export interface ClientCertificate {
  readonly files: ClientCertificateFiles;
  /** PEM: the leaf first, then any intermediates the server needs to build the chain. */
  readonly certPem: string;
  readonly keyPem: string;
  readonly passphrase: string | undefined;
  readonly subject: string;
  readonly notAfter: Date;
  /** SHA-256 fingerprint of the leaf, to tell pairs apart in logs and doctor. */
  readonly fingerprint: string;
}

const PEM_PRIVATE_KEY = /-----BEGIN (?:[A-Z]+ )?(?:ENCRYPTED )?PRIVATE KEY-----/;

/** Reads and checks the pair at start (`check-config` and `run` share this). Throws one message naming the file. */
export function loadClientCertificateSync(files: ClientCertificateFiles, now: Date): ClientCertificate {
  const read = (file: string, max: number, what: string) => {
    try {
      return readBoundedFileSync(file, max);
    } catch (err) {
      throw new Error(`${what} ${file}: ${err instanceof FileRefusedError ? err.reason : (err as Error).message}`);
    }
  };
  return checkClientCertificate(files, {
    cert: read(files.certFile, MAX_PEM_FILE_BYTES, `${files.key}.certFile`),
    key: read(files.keyFile, MAX_PEM_FILE_BYTES, `${files.key}.keyFile`),
    passphrase: files.keyPassphraseFile ? read(files.keyPassphraseFile, MAX_SECRET_FILE_BYTES, `${files.key}.keyPassphraseFile`) : undefined,
  }, now);
}

/** The same without blocking the event loop, for a reload while running. */
export async function loadClientCertificate(files: ClientCertificateFiles, now: Date): Promise<ClientCertificate> {
  const read = async (file: string, max: number, what: string) => {
    try {
      return await readBoundedFile(file, max);
    } catch (err) {
      throw new Error(`${what} ${file}: ${err instanceof FileRefusedError ? err.reason : (err as Error).message}`);
    }
  };
  const [cert, key, passphrase] = await Promise.all([
    read(files.certFile, MAX_PEM_FILE_BYTES, `${files.key}.certFile`),
    read(files.keyFile, MAX_PEM_FILE_BYTES, `${files.key}.keyFile`),
    files.keyPassphraseFile ? read(files.keyPassphraseFile, MAX_SECRET_FILE_BYTES, `${files.key}.keyPassphraseFile`) : undefined,
  ]);
  return checkClientCertificate(files, { cert, key, passphrase }, now);
}

/**
 * Refuses what would fail at the TLS handshake, naming the file: no certificate, no key, an
 * encrypted key without (or with a wrong) passphrase, a key of another certificate, an expired
 * certificate. A server would only say "bad certificate", or nothing, at the first request.
 */
export function checkClientCertificate(files: ClientCertificateFiles, text: { cert: string; key: string; passphrase: string | undefined }, now: Date): ClientCertificate {
  const { key: prefix } = files;
  const certProblem = pemCertificatesProblem(text.cert);
  if (certProblem) throw new Error(`${prefix}.certFile ${files.certFile} ${certProblem}`);
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(text.cert);
  } catch (err) {
    throw new Error(`${prefix}.certFile ${files.certFile} cannot be parsed (${(err as Error).message})`);
  }
  if (!PEM_PRIVATE_KEY.test(text.key)) throw new Error(`${prefix}.keyFile ${files.keyFile} holds no PEM private key (-----BEGIN PRIVATE KEY----- ...)`);
  // A passphrase file ends with a newline more often than not; the passphrase does not.
  const passphrase = text.passphrase?.replace(/\r?\n$/, '');
  // Told from the armour: OpenSSL 3 reports a missing passphrase as ERR_OSSL_CRYPTO_INTERRUPTED_OR_CANCELLED.
  const encrypted = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(text.key);
  if (encrypted && passphrase === undefined) throw new Error(`${prefix}.keyFile ${files.keyFile} is encrypted: set ${prefix}.keyPassphraseFile`);
  let keyObject: KeyObject;
  try {
    keyObject = createPrivateKey(passphrase === undefined ? { key: text.key } : { key: text.key, passphrase });
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    if (/ERR_MISSING_PASSPHRASE/.test(code)) throw new Error(`${prefix}.keyFile ${files.keyFile} is encrypted: set ${prefix}.keyPassphraseFile`);
    if (passphrase !== undefined) throw new Error(`${prefix}.keyFile ${files.keyFile} cannot be decrypted with ${prefix}.keyPassphraseFile ${files.keyPassphraseFile} (or is not a private key)`);
    throw new Error(`${prefix}.keyFile ${files.keyFile} is not a usable private key (${code || 'unparsable'})`);
  }
  if (!leaf.checkPrivateKey(keyObject)) {
    throw new Error(`${prefix}.keyFile ${files.keyFile} does not match the certificate in ${prefix}.certFile ${files.certFile}`);
  }
  try {
    // What the handshake will build: catches what the checks above do not see (a cut-off
    // intermediate after a complete leaf), before it replaces a working pair.
    createSecureContext({ cert: text.cert, key: text.key, ...(passphrase !== undefined ? { passphrase } : {}) });
  } catch (err) {
    throw new Error(`${prefix}.certFile ${files.certFile} cannot be used with its key (${(err as Error).message})`);
  }
  const notAfter = new Date(leaf.validTo);
  if (notAfter.getTime() <= now.getTime()) {
    throw new Error(`${prefix}.certFile ${files.certFile}: the certificate expired on ${notAfter.toISOString()}`);
  }
  return {
    files,
    certPem: text.cert,
    keyPem: text.key,
    passphrase,
    subject: leaf.subject.replace(/\n/g, ', '),
    notAfter,
    fingerprint: leaf.fingerprint256,
  };
}
