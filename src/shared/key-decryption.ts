import { createPrivateKey, type KeyObject } from 'node:crypto';
import { Worker } from 'node:worker_threads';

/**
 * Decrypts a private key on a worker thread, so that its key derivation (PBKDF2 or scrypt, chosen
 * by whoever encrypted the file) never stalls the event loop: /healthz, the token loop and every
 * proxied request keep running meanwhile (docs/traps.md T51). The worker is plain CommonJS given as
 * text, so it runs the same from src/ and from the bundle; it sends back a KeyObject (Node clones
 * those between threads), or the error's code.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { createPrivateKey } = require('node:crypto');
try {
  parentPort.postMessage({ key: createPrivateKey({ key: workerData.key, passphrase: workerData.passphrase }) });
} catch (err) {
  parentPort.postMessage({ code: err && err.code || 'unparsable' });
}
`;

/** A key that could not be decrypted; `code` is Node's (ERR_MISSING_PASSPHRASE, ERR_OSSL_…). */
export class KeyDecryptionError extends Error {
  constructor(readonly code: string) {
    super(`the private key cannot be decrypted (${code})`);
  }
}

/** The key decrypted off the main thread. Rejects with a KeyDecryptionError. */
export function decryptKeyOffThread(pem: string, passphrase: string): Promise<KeyObject> {
  return new Promise((resolve, reject) => {
    // No execArgv: a loader the parent was started with (tsx in tests) is not needed for this text.
    const worker = new Worker(WORKER, { eval: true, workerData: { key: pem, passphrase }, execArgv: [], stdout: true, stderr: true });
    let settled = false;
    worker.once('message', (answer: { key?: KeyObject; code?: string }) => {
      settled = true;
      if (answer.key) resolve(answer.key);
      else reject(new KeyDecryptionError(answer.code ?? 'unparsable'));
      void worker.terminate();
    });
    worker.once('error', (err) => {
      if (!settled) reject(new KeyDecryptionError((err as { code?: string }).code ?? 'worker failed'));
    });
    worker.once('exit', () => {
      if (!settled) reject(new KeyDecryptionError('worker exited'));
    });
  });
}

/** The same on this thread, for a command that runs once (check-config). Throws a KeyDecryptionError. */
export function decryptKeySync(pem: string, passphrase: string | undefined): KeyObject {
  try {
    return createPrivateKey(passphrase === undefined ? { key: pem } : { key: pem, passphrase });
  } catch (err) {
    throw new KeyDecryptionError((err as { code?: string }).code ?? 'unparsable');
  }
}
