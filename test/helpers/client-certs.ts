import 'reflect-metadata';
import { createPrivateKey, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKey = webcrypto.CryptoKey;
const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 86_400_000;

/** A CA that signs client certificates, as a vendor running mutual TLS has. */
export interface ClientCa {
  caPem: string;
  /** A client certificate and its PKCS#8 key, valid from `days[0]` to `days[1]` days from now. */
  issue(commonName: string, days?: [number, number]): Promise<{ certPem: string; keyPem: string }>;
}

export async function createClientCa(name = 'b2b test client CA'): Promise<ClientCa> {
  const keys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']) as webcrypto.CryptoKeyPair;
  const now = Date.now();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(), name: `CN=${name}`, notBefore: new Date(now - DAY_MS), notAfter: new Date(now + 365 * DAY_MS), keys, signingAlgorithm: ALG,
    extensions: [new x509.BasicConstraintsExtension(true, 0, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  return {
    caPem: ca.toString('pem'),
    async issue(commonName, days = [-1, 30]) {
      const leafKeys = await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']) as webcrypto.CryptoKeyPair;
      const cert = await x509.X509CertificateGenerator.create({
        serialNumber: serial(), subject: `CN=${commonName}`, issuer: ca.subject,
        notBefore: new Date(now + days[0] * DAY_MS), notAfter: new Date(now + days[1] * DAY_MS),
        publicKey: leafKeys.publicKey as CryptoKey, signingKey: keys.privateKey as CryptoKey, signingAlgorithm: ALG,
        extensions: [
          new x509.BasicConstraintsExtension(false, undefined, true),
          new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
          new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth], false),
        ],
      });
      const pkcs8 = await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey as CryptoKey);
      return { certPem: cert.toString('pem'), keyPem: x509.PemConverter.encode(pkcs8, 'PRIVATE KEY') };
    },
  };
}

/** The key as an encrypted PKCS#8 PEM (what `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes). */
export function encryptKey(keyPem: string, passphrase: string): string {
  return createPrivateKey(keyPem).export({ format: 'pem', type: 'pkcs8', cipher: 'aes-256-cbc', passphrase }) as string;
}

function serial(): string {
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0] = bytes[0]! & 0x7f;
  return Buffer.from(bytes).toString('hex');
}
