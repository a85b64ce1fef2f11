import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from '../observability/logger.js';
import { fingerprint } from '../shared/secrets.js';

/** Writes the current token to `token.file` for tools that read it instead of using the proxy. */
export interface TokenFileWriter {
  /** Queues a write; never rejects (failures are logged). Writes happen in call order. */
  write(token: string): Promise<void>;
  /** Resolves when every queued write has finished. */
  flush(): Promise<void>;
  /**
   * After the queued writes, deletes the file: on a clean stop the token must not outlive the
   * process that renewed it (docs/security.md). Never rejects; a file already gone is fine.
   */
  remove(): Promise<void>;
}

/**
 * Writes `token` to `path` atomically: a temporary file in the same directory (so the rename
 * stays on one filesystem), created with mode 0600 so the token is never readable by others,
 * then renamed over the target. Readers see the old or the new token, never half of one.
 */
export async function writeTokenFile(path: string, token: string): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
  // 'wx' fails rather than following a symlink someone planted at the temporary name.
  const handle = await open(tmp, 'wx', 0o600);
  try {
    await handle.writeFile(token);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
  await handle.close();
  try {
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}

/** A serialized writer so an older token can never overwrite a newer one; failures are not fatal. */
export function createTokenFileWriter(path: string, logger: Logger): TokenFileWriter {
  let tail: Promise<void> = Promise.resolve();
  return {
    write(token) {
      tail = tail.then(() =>
        writeTokenFile(path, token).then(
          () => {
            logger.debug('token file written', { file: path, fingerprint: fingerprint(token) });
          },
          (err: NodeJS.ErrnoException) => {
            logger.warn('cannot write the token file', { file: path, reason: err.code ?? err.message });
          },
        ),
      );
      return tail;
    },
    flush: () => tail,
    remove() {
      tail = tail.then(() => unlink(path).then(
        () => logger.debug('token file removed', { file: path }),
        (err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') logger.warn('cannot remove the token file', { file: path, reason: err.code ?? err.message });
        },
      ));
      return tail;
    },
  };
}
