import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { FileRefusedError, MAX_SECRET_FILE_BYTES, readBoundedFile, readBoundedFileSync } from '../../src/shared/bounded-file.js';

const dir = mkdtempSync(join(tmpdir(), 'b2b-bounded-'));

/** Rejects when `p` has not settled within 5 s: a blocked open would hang here instead of failing. */
function settles<T>(p: Promise<T>): Promise<T> {
  return Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error('did not settle: blocked')), 5000).unref())]);
}

async function refusal(path: string): Promise<string> {
  const err = await settles(readBoundedFile(path, MAX_SECRET_FILE_BYTES)).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof FileRefusedError, String(err));
  assert.throws(() => readBoundedFileSync(path, MAX_SECRET_FILE_BYTES), (e: unknown) => e instanceof FileRefusedError && e.reason === err.reason);
  return err.reason;
}

describe('reading a file the operator names', () => {
  it('reads a regular file, also through a symlink (kubelet\'s ..data layout)', async () => {
    const data = join(dir, '..2026_11_25'); mkdirSync(data);
    writeFileSync(join(data, 'password'), 'the-password\n');
    symlinkSync('..2026_11_25', join(dir, '..data'));
    symlinkSync('..data/password', join(dir, 'password'));
    assert.equal(await readBoundedFile(join(dir, 'password'), MAX_SECRET_FILE_BYTES), 'the-password\n');
  });

  it('refuses a FIFO without waiting for a writer (a plain read blocks for ever)', async () => {
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    assert.equal(await refusal(fifo), 'is a FIFO, not a regular file');
  });

  it('refuses a directory, /dev/zero through a symlink, a sparse 1 GB file and 8 KiB of NUL by type or size, before reading them', async () => {
    assert.equal(await refusal(dir), 'is a directory, not a regular file');
    symlinkSync('/dev/zero', join(dir, 'zero'));
    assert.equal(await refusal(join(dir, 'zero')), 'is a character device, not a regular file');
    const big = join(dir, 'big');
    writeFileSync(big, '');
    truncateSync(big, 1024 ** 3);
    assert.equal(await refusal(big), `is larger than ${MAX_SECRET_FILE_BYTES} bytes (${1024 ** 3})`);
    const nul = join(dir, 'nul');
    writeFileSync(nul, Buffer.alloc(8192));
    assert.equal(await refusal(nul), `is larger than ${MAX_SECRET_FILE_BYTES} bytes (8192)`);
    assert.equal(await refusal(join(dir, 'missing')), 'does not exist');
  });
});
