import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * Reading a file the operator names, safely (docs/traps.md T35): only a regular file (symlinks are
 * followed, as kubelet's Secret layout needs), opened with O_NONBLOCK so a FIFO never blocks the
 * open, checked on the open descriptor before a byte is read, and never more than `maxBytes`. A
 * plain readFile of a FIFO waits for a writer for ever (on the main thread, or holding a libuv pool
 * thread that DNS lookups need), and of `/dev/zero` or a 1 GB file takes the memory it finds.
 */

/** Secrets (ApiKey, password, tokens) are short: anything larger is a mistake, not a secret. */
export const MAX_SECRET_FILE_BYTES = 4096;
/** A PEM bundle: the whole system store is about 200 KB. */
export const MAX_PEM_FILE_BYTES = 1024 * 1024;

/** The file was not read; `reason` says why in words ("is a FIFO, not a regular file"). */
export class FileRefusedError extends Error {
  override name = 'FileRefusedError';
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
  }
}

const FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** Reads `path` as UTF-8 under the rules above, without blocking the event loop. */
export async function readBoundedFile(path: string, maxBytes: number): Promise<string> {
  const handle = await open(path, FLAGS).catch((err: unknown) => {
    throw openRefusal(err);
  });
  try {
    const size = checkStats(await handle.stat(), maxBytes);
    // One byte more than allowed tells a file that grew since fstat from one that fits.
    const buffer = Buffer.alloc(Math.min(size, maxBytes) + 1);
    let read = 0;
    while (read < buffer.length) {
      const { bytesRead } = await handle.read(buffer, read, buffer.length - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    if (read > maxBytes) throw new FileRefusedError(`is larger than ${maxBytes} bytes`);
    return buffer.subarray(0, read).toString('utf8');
  } finally {
    await handle.close().catch(() => undefined);
  }
}

/** The same, synchronously: for start-up checks that run before anything is served. */
export function readBoundedFileSync(path: string, maxBytes: number, encoding: BufferEncoding = 'utf8'): string {
  let fd: number;
  try {
    fd = openSync(path, FLAGS);
  } catch (err) {
    throw openRefusal(err);
  }
  try {
    const size = checkStats(fstatSync(fd), maxBytes);
    const buffer = Buffer.alloc(Math.min(size, maxBytes) + 1);
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read);
      if (n === 0) break;
      read += n;
    }
    if (read > maxBytes) throw new FileRefusedError(`is larger than ${maxBytes} bytes`);
    return buffer.subarray(0, read).toString(encoding);
  } finally {
    closeSync(fd);
  }
}

function checkStats(stats: Stats, maxBytes: number): number {
  if (!stats.isFile()) throw new FileRefusedError(`is ${kindOf(stats)}, not a regular file`);
  if (stats.size > maxBytes) throw new FileRefusedError(`is larger than ${maxBytes} bytes (${stats.size})`);
  return stats.size;
}

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a regular file';
}

function openRefusal(err: unknown): FileRefusedError {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return new FileRefusedError('does not exist');
  if (code === 'EACCES') return new FileRefusedError('cannot be read (EACCES: permission denied)');
  return new FileRefusedError(`cannot be read (${code ?? 'error'})`);
}
