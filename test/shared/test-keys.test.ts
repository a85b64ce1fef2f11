import assert from 'node:assert/strict';
import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { generateTlsMaterial } from '../../src/simulator/certs.js';
import { createClientCa } from '../helpers/client-certs.js';
import { testTls } from '../helpers/tls.js';

/**
 * From Node 24.5 (OpenSSL security level 2) a TLS key under 2048 RSA bits is refused
 * (`ERR_SSL_EE_KEY_TOO_SMALL` for a server's own key, "EE certificate key too weak" for a peer's).
 * Every key the suite, the simulator and the benchmark generate must stay usable on every supported
 * runtime: elliptic curves of 256 bits or more, or RSA of 2048 bits or more (docs/traps.md T48, T61).
 */
function strongEnough(key: KeyObject): boolean {
  const details = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'ec') return ['prime256v1', 'secp384r1', 'secp521r1'].includes(String(details.namedCurve));
  if (key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'rsa-pss') return (details.modulusLength ?? 0) >= 2048;
  return key.asymmetricKeyType === 'ed25519' || key.asymmetricKeyType === 'ed448';
}

function describeKey(key: KeyObject): string {
  return `${key.asymmetricKeyType} ${JSON.stringify(key.asymmetricKeyDetails)}`;
}

describe('test and simulator keys', () => {
  it('the simulator, the suite\'s test CA and the client-certificate CA only make keys Node 24.5+ accepts', async () => {
    const simulator = await generateTlsMaterial(['127.0.0.1']);
    const suite = await testTls();
    const clientCa = await createClientCa();
    const client = await clientCa.issue('key-size-check');
    const certs = [simulator.caPem, simulator.certPem, suite.caPem, suite.certPem, clientCa.caPem, client.certPem];
    for (const pem of certs) {
      const key = new X509Certificate(pem).publicKey;
      assert.ok(strongEnough(key), `certificate key ${describeKey(key)}`);
    }
    for (const pem of [simulator.keyPem, suite.keyPem, client.keyPem]) {
      const key = createPrivateKey(pem);
      assert.ok(strongEnough(key), `private key ${describeKey(key)}`);
    }
    // The runtime's own verdict: a server context with the key and certificate builds.
    assert.doesNotThrow(() => createSecureContext({ key: simulator.keyPem, cert: simulator.certPem }));
    assert.doesNotThrow(() => createSecureContext({ key: client.keyPem, cert: client.certPem }));
  });

  it('the material from outside the project (undici\'s agent1) is RSA 4096', () => {
    const cert = readFileSync(new URL('../fixtures/undici-agent1/cert.pem', import.meta.url), 'utf8');
    assert.ok(strongEnough(new X509Certificate(cert).publicKey));
  });

  it('the check itself refuses what the runtime refuses: RSA 1024, a 192-bit curve', () => {
    const rsa1024 = { asymmetricKeyType: 'rsa', asymmetricKeyDetails: { modulusLength: 1024 } } as unknown as KeyObject;
    const p192 = { asymmetricKeyType: 'ec', asymmetricKeyDetails: { namedCurve: 'prime192v1' } } as unknown as KeyObject;
    assert.equal(strongEnough(rsa1024), false);
    assert.equal(strongEnough(p192), false);
    assert.equal(strongEnough(createPublicKey(readFileSync(new URL('../fixtures/undici-agent1/ca.pem', import.meta.url), 'utf8'))), true);
  });
});
