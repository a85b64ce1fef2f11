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

/**
 * Longest a decryption may take before its worker is ended. The accepted work factors
 * (key-derivation.ts) take well under a second on a current core; this leaves room for a slow,
 * shared one and still ends whatever an unread header would have cost.
 */
export const KEY_DECRYPTION_TIMEOUT_MS = 30_000;

export interface DecryptOptions {
  /** {@link KEY_DECRYPTION_TIMEOUT_MS} unless given. */
  timeoutMs?: number;
  /** Aborted when the process stops: the worker is ended at once, the promise rejects. */
  signal?: AbortSignal | undefined;
}

/**
 * The key decrypted off the main thread. Rejects with a KeyDecryptionError: `timed out` past the
 * deadline, `stopped` once `signal` aborts; either way the worker is terminated. The worker keeps
 * the process alive while it works (start-up awaits the key before anything else holds the event
 * loop: an unref'd worker let Node 22 end the process there); the deadline and the stop bound it.
 */
export function decryptKeyOffThread(pem: string, passphrase: string, options: DecryptOptions = {}): Promise<KeyObject> {
  const { signal } = options;
  if (signal?.aborted) return Promise.reject(new KeyDecryptionError('stopped'));
  return new Promise((resolve, reject) => {
    // No execArgv: a loader the parent was started with (tsx in tests) is not needed for this text.
    const worker = new Worker(WORKER, { eval: true, workerData: { key: pem, passphrase }, execArgv: [], stdout: true, stderr: true });
    let settled = false;
    const end = (outcome: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      signal?.removeEventListener('abort', onAbort);
      outcome();
      void worker.terminate();
    };
    const deadline = setTimeout(() => end(() => reject(new KeyDecryptionError('timed out'))), options.timeoutMs ?? KEY_DECRYPTION_TIMEOUT_MS);
    deadline.unref();
    const onAbort = (): void => end(() => reject(new KeyDecryptionError('stopped')));
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (answer: { key?: KeyObject; code?: string }) => {
      end(() => (answer.key ? resolve(answer.key) : reject(new KeyDecryptionError(answer.code ?? 'unparsable'))));
    });
    worker.once('error', (err) => end(() => reject(new KeyDecryptionError((err as { code?: string }).code ?? 'worker failed'))));
    worker.once('exit', () => end(() => reject(new KeyDecryptionError('worker exited'))));
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
