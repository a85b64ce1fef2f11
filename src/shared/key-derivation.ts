/**
 * What decrypting a PKCS#8 key costs, read from its own header before anything decrypts it
 * (docs/traps.md T51). An `ENCRYPTED PRIVATE KEY` names its key derivation and that derivation's
 * work factor in clear: PBKDF2's iteration count (PBES2, what `openssl pkcs8 -v2` writes), scrypt's
 * N, r and p, or the older PBES1 / PKCS#12 iteration count. OpenSSL accepts counts up to 2³¹−1,
 * minutes of CPU per decryption; the sidecar refuses more than these bounds with a message.
 */

/** Most PBKDF2 (or PBES1) iterations accepted: OpenSSL writes 2,048 by default; 600,000 is OWASP's advice for PBKDF2-SHA256. */
export const MAX_KEY_ITERATIONS = 1_000_000;
/** Most scrypt work accepted, N·r·p: OpenSSL's default (16384·8·1) eight times over. */
export const MAX_SCRYPT_WORK = 1_048_576;

const OID_PBES2 = '1.2.840.113549.1.5.13';
const OID_PBKDF2 = '1.2.840.113549.1.5.12';
const OID_SCRYPT = '1.3.6.1.4.1.11591.4.11';
/** PBES1 (PKCS#5 v1.5) and PKCS#12 password-based schemes: parameters `{ salt, iterations }`. */
const PBES1 = /^1\.2\.840\.113549\.1\.(5\.(1|3|4|6|10|11)|12\.1\.[1-6])$/;

const ENCRYPTED_PKCS8 = /-----BEGIN ENCRYPTED PRIVATE KEY-----([\s\S]*?)-----END ENCRYPTED PRIVATE KEY-----/;

/**
 * The derivation an encrypted PKCS#8 key names; undefined when the text holds no `ENCRYPTED PRIVATE
 * KEY`, 'unreadable' when it holds one whose header this cannot read. OpenSSL may still accept such
 * a key (it reads BER, not only DER), so an unreadable header is refused, never left to OpenSSL.
 */
export type KeyDerivation =
  | { readonly kdf: 'pbkdf2'; readonly iterations: number }
  | { readonly kdf: 'scrypt'; readonly n: number; readonly r: number; readonly p: number };

export function keyDerivation(pem: string): KeyDerivation | 'unreadable' | undefined {
  const match = ENCRYPTED_PKCS8.exec(pem);
  if (!match) return undefined;
  try {
    const der = Buffer.from(match[1]!.replace(/\s+/g, ''), 'base64');
    // EncryptedPrivateKeyInfo ::= SEQUENCE { encryptionAlgorithm AlgorithmIdentifier, encryptedData OCTET STRING }
    const [algorithm] = children(der, 0);
    const [oid, params] = children(der, algorithm!.start);
    const scheme = objectId(der, oid!);
    if (scheme === OID_PBES2) {
      const [kdfAlgorithm] = children(der, params!.start);
      const [kdfOid, kdfParams] = children(der, kdfAlgorithm!.start);
      const kdf = objectId(der, kdfOid!);
      const fields = children(der, kdfParams!.start);
      if (kdf === OID_PBKDF2) return { kdf: 'pbkdf2', iterations: integer(der, fields[1]!) };
      if (kdf === OID_SCRYPT) return { kdf: 'scrypt', n: integer(der, fields[1]!), r: integer(der, fields[2]!), p: integer(der, fields[3]!) };
      return 'unreadable';
    }
    if (PBES1.test(scheme)) return { kdf: 'pbkdf2', iterations: integer(der, children(der, params!.start)[1]!) };
    return 'unreadable';
  } catch {
    return 'unreadable'; // fail closed: what cannot be read here is not handed to OpenSSL to find out
  }
}

/** Why this key costs too much to decrypt, or undefined. */
export function keyDerivationProblem(pem: string): string | undefined {
  const derivation = keyDerivation(pem);
  if (derivation === 'unreadable') {
    return 'is an ENCRYPTED PRIVATE KEY whose encryption header cannot be read (its key-derivation cost cannot be checked before decrypting): re-encrypt it, e.g. openssl pkcs8 -topk8 -v2 aes-256-cbc -iter 100000';
  }
  if (derivation?.kdf === 'pbkdf2' && derivation.iterations > MAX_KEY_ITERATIONS) {
    return `is encrypted with ${derivation.iterations.toLocaleString('en')} key-derivation iterations; at most ${MAX_KEY_ITERATIONS.toLocaleString('en')} are accepted (each decryption would take that much CPU): re-encrypt it, e.g. openssl pkcs8 -topk8 -v2 aes-256-cbc -iter 100000`;
  }
  if (derivation?.kdf === 'scrypt' && derivation.n * derivation.r * derivation.p > MAX_SCRYPT_WORK) {
    return `is encrypted with scrypt N=${derivation.n} r=${derivation.r} p=${derivation.p}; at most N·r·p = ${MAX_SCRYPT_WORK.toLocaleString('en')} is accepted: re-encrypt it, e.g. openssl pkcs8 -topk8 -scrypt`;
  }
  return undefined;
}

interface Tlv { readonly tag: number; readonly start: number; readonly end: number }

/**
 * One element at `at`: its tag and where its value lies. A long-form length is read as OpenSSL
 * reads it, leading zero bytes skipped however many there are (not strict DER, which has none), so
 * that no padding hides a header from this reader while OpenSSL still decrypts the key. What is left
 * after the zeros must fit in 4 bytes; an indefinite length (BER) is not read (the caller refuses).
 */
function element(der: Buffer, at: number): Tlv {
  if (at + 2 > der.length) throw new Error('truncated');
  const tag = der[at]!;
  if ((tag & 0x1f) === 0x1f) throw new Error('unsupported tag');
  let length = der[at + 1]!;
  let start = at + 2;
  if (length & 0x80) {
    let bytes = length & 0x7f;
    if (bytes === 0) throw new Error('indefinite length');
    if (start + bytes > der.length) throw new Error('truncated');
    while (bytes > 0 && der[start] === 0) {
      start++;
      bytes--;
    }
    if (bytes > 4) throw new Error('unsupported length');
    length = 0;
    for (let i = 0; i < bytes; i++) length = length * 256 + der[start + i]!;
    start += bytes;
  }
  if (start + length > der.length) throw new Error('truncated');
  return { tag, start, end: start + length };
}

/** The elements inside the constructed element at `at` (a SEQUENCE). */
function children(der: Buffer, at: number): Tlv[] {
  const outer = element(der, at);
  if (outer.tag !== 0x30) throw new Error('not a sequence');
  const out: Tlv[] = [];
  for (let i = outer.start; i < outer.end;) {
    const child = element(der, i);
    out.push({ tag: child.tag, start: i, end: child.end });
    i = child.end;
  }
  return out;
}

function objectId(der: Buffer, at: Tlv): string {
  const { tag, start, end } = element(der, at.start);
  if (tag !== 0x06) throw new Error('not an object identifier');
  const first = der[start]!;
  const parts = [Math.floor(first / 40), first % 40];
  let value = 0;
  for (let i = start + 1; i < end; i++) {
    value = value * 128 + (der[i]! & 0x7f);
    if ((der[i]! & 0x80) === 0) {
      parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

/** A non-negative INTEGER; beyond 2⁵³ it is only "very large" (Infinity). */
function integer(der: Buffer, at: Tlv): number {
  const { tag, start, end } = element(der, at.start);
  if (tag !== 0x02) throw new Error('not an integer');
  let value = 0;
  for (let i = start; i < end; i++) value = value * 256 + der[i]!;
  return Number.isSafeInteger(value) ? value : Infinity;
}
