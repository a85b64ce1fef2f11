import { X509Certificate, type KeyObject } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { FileRefusedError, MAX_PEM_FILE_BYTES, MAX_SECRET_FILE_BYTES, readBoundedFile, readBoundedFileSync } from './bounded-file.js';
import { pemCertificatesProblem } from './tls.js';
import { keyDerivationProblem } from './key-derivation.js';
import { decryptKeyOffThread, decryptKeySync, KEY_DECRYPTION_TIMEOUT_MS, KeyDecryptionError, type DecryptOptions } from './key-decryption.js';

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
  /** The key file's text as read (encrypted or not): what a re-read compares against. */
  readonly keyPem: string;
  readonly passphrase: string | undefined;
  /** The key decrypted once (PKCS#8 PEM, no passphrase): what TLS contexts are built from. */
  readonly contextKeyPem: string;
  readonly subject: string;
  readonly notAfter: Date;
  /** SHA-256 fingerprint of the leaf, to tell pairs apart in logs and doctor. */
  readonly fingerprint: string;
}

/** The three files' text, as read. */
interface PairText { cert: string; key: string; passphrase: string | undefined }

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
  const text: PairText = {
    cert: read(files.certFile, MAX_PEM_FILE_BYTES, `${files.key}.certFile`),
    key: read(files.keyFile, MAX_PEM_FILE_BYTES, `${files.key}.keyFile`),
    passphrase: files.keyPassphraseFile ? read(files.keyPassphraseFile, MAX_SECRET_FILE_BYTES, `${files.key}.keyPassphraseFile`) : undefined,
  };
  const checked = precheck(files, text);
  return finish(files, text, checked, decrypting(files, checked, () => decryptKeySync(text.key, checked.passphrase)), now);
}

/**
 * The same without blocking the event loop, for the start and a reload while running: an
 * encrypted key is decrypted on a worker thread (shared/key-decryption.ts). When the three files
 * hold exactly what `current` was made from, `current` is returned without decrypting again.
 */
export async function loadClientCertificate(files: ClientCertificateFiles, now: Date, current?: ClientCertificate, options: DecryptOptions = {}): Promise<ClientCertificate> {
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
  const text: PairText = { cert, key, passphrase };
  const checked = precheck(files, text);
  if (current && current.files === files && current.certPem === cert && current.keyPem === key && current.passphrase === checked.passphrase) return current;
  let keyObject: KeyObject;
  if (checked.encrypted) {
    try {
      keyObject = await decryptKeyOffThread(key, checked.passphrase!, options);
    } catch (err) {
      keyObject = decrypting(files, checked, () => { throw err; });
    }
  } else {
    keyObject = decrypting(files, checked, () => decryptKeySync(key, undefined));
  }
  return finish(files, text, checked, keyObject, now);
}

interface Prechecked { leaf: X509Certificate; passphrase: string | undefined; encrypted: boolean }

/**
 * Refuses what would fail at the TLS handshake, naming the file: no certificate, no key, an
 * encrypted key without (or with a wrong) passphrase, a key of another certificate, an expired
 * certificate. A server would only say "bad certificate", or nothing, at the first request.
 * Everything that needs no decryption is checked first, the cost of decrypting among it.
 */
function precheck(files: ClientCertificateFiles, text: PairText): Prechecked {
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
  // Read from the key's own header, before any decryption: a costly derivation is refused unread.
  const costly = keyDerivationProblem(text.key);
  if (costly) throw new Error(`${prefix}.keyFile ${files.keyFile} ${costly}`);
  return { leaf, passphrase, encrypted };
}

/** Runs a decryption, turning its failure into the message naming the files. */
function decrypting(files: ClientCertificateFiles, checked: Prechecked, decrypt: () => KeyObject): KeyObject {
  const { key: prefix } = files;
  try {
    return decrypt();
  } catch (err) {
    const code = err instanceof KeyDecryptionError ? err.code : (err as { code?: string }).code ?? '';
    if (code === 'timed out') throw new Error(`${prefix}.keyFile ${files.keyFile} was not decrypted within ${KEY_DECRYPTION_TIMEOUT_MS / 1000} s: re-encrypt it with a lower work factor, e.g. openssl pkcs8 -topk8 -v2 aes-256-cbc -iter 100000`);
    if (code === 'stopped') throw new Error(`${prefix}.keyFile ${files.keyFile}: decryption given up, the process is stopping`);
    if (/ERR_MISSING_PASSPHRASE/.test(code)) throw new Error(`${prefix}.keyFile ${files.keyFile} is encrypted: set ${prefix}.keyPassphraseFile`);
    if (checked.encrypted) throw new Error(`${prefix}.keyFile ${files.keyFile} cannot be decrypted with ${prefix}.keyPassphraseFile ${files.keyPassphraseFile} (or is not a private key)`);
    throw new Error(`${prefix}.keyFile ${files.keyFile} is not a usable private key (${code || 'unparsable'})`);
  }
}

/** The checks on the decrypted key, and the result. Nothing here decrypts again. */
function finish(files: ClientCertificateFiles, text: PairText, checked: Prechecked, keyObject: KeyObject, now: Date): ClientCertificate {
  const { key: prefix } = files;
  const { leaf } = checked;
  if (!leaf.checkPrivateKey(keyObject)) {
    throw new Error(`${prefix}.keyFile ${files.keyFile} does not match the certificate in ${prefix}.certFile ${files.certFile}`);
  }
  const contextKeyPem = keyObject.export({ type: 'pkcs8', format: 'pem' }) as string;
  try {
    // What the handshake will build: catches what the checks above do not see (a cut-off
    // intermediate after a complete leaf), before it replaces a working pair.
    createSecureContext({ cert: text.cert, key: contextKeyPem });
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
    passphrase: checked.passphrase,
    contextKeyPem,
    subject: leaf.subject.replace(/\n/g, ', '),
    notAfter,
    fingerprint: leaf.fingerprint256,
  };
}
