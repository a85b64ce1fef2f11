import 'reflect-metadata'; // @peculiar/x509's dependency injection needs it loaded first
import { webcrypto, X509Certificate as NodeX509 } from 'node:crypto';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

/** A private CA and a server certificate it signed, all PEM. */
export interface TlsMaterial {
  caPem: string;
  certPem: string;
  keyPem: string;
}

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

/**
 * Generates a throw-away CA and a server certificate for `hostnames` (DNS names or IP
 * literals), in process, so the simulator needs no openssl at run time. P-256 keys keep this
 * around 10 ms.
 */
export async function generateTlsMaterial(
  hostnames: readonly string[] = ['localhost', '127.0.0.1', '::1'],
  now: Date = new Date(),
): Promise<TlsMaterial> {
  const notBefore = new Date(now.getTime() - DAY_MS);
  const notAfter = new Date(now.getTime() + 30 * DAY_MS);
  const caKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const caCert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: 'CN=b2b-sidecar simulator CA',
    notBefore,
    notAfter,
    keys: caKeys as CryptoKeyPair,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey as CryptoKey),
    ],
  });

  const serverKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']);
  const altNames = hostnames.map((h) => (isIp(h) ? { type: 'ip' as const, value: h } : { type: 'dns' as const, value: h }));
  const serverCert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: `CN=${hostnames[0] ?? 'localhost'}`,
    issuer: caCert.subject,
    notBefore,
    notAfter,
    publicKey: serverKeys.publicKey as CryptoKey,
    signingKey: caKeys.privateKey as CryptoKey,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth], false),
      new x509.SubjectAlternativeNameExtension(altNames, false),
      await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
    ],
  });

  const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', serverKeys.privateKey as CryptoKey);
  const keyPem = x509.PemConverter.encode(pkcs8, 'PRIVATE KEY');
  const material = { caPem: caCert.toString('pem'), certPem: serverCert.toString('pem'), keyPem };
  // Parse once with Node's own X.509 so a malformed certificate fails here, not in a handshake.
  new NodeX509(material.certPem);
  return material;
}

function isIp(host: string): boolean {
  return /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.includes(':');
}

function randomSerial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f; // positive
  return Buffer.from(bytes).toString('hex');
}
