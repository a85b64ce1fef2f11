import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { loadClientCertificate, loadClientCertificateSync, type ClientCertificateFiles } from '../../src/shared/client-certificate.js';
import { keyDerivation, MAX_KEY_ITERATIONS } from '../../src/shared/key-derivation.js';
import { decryptKeyOffThread, KeyDecryptionError } from '../../src/shared/key-decryption.js';
import { RunGroup } from '../../src/shared/run-group.js';
import { StoppedDuringStartError } from '../../src/shared/errors.js';
import { createClientCa } from '../helpers/client-certs.js';

/**
 * Encrypted keys are written by the real tool operators use: `openssl pkcs8 -topk8 -v2 aes-256-cbc
 * -iter N` (PBES2, PBKDF2 with HMAC-SHA256) and `openssl pkcs8 -topk8 -scrypt`.
 */
async function pair(t: { after: (fn: () => void) => void }, opensslArgs: string[]): Promise<ClientCertificateFiles & { dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'b2b-key-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const ca = await createClientCa();
  const { certPem, keyPem } = await ca.issue('costly key');
  writeFileSync(join(dir, 'plain.pem'), keyPem);
  writeFileSync(join(dir, 'cert.pem'), certPem);
  writeFileSync(join(dir, 'pass'), 'correct horse\n');
  execFileSync('openssl', ['pkcs8', '-topk8', ...opensslArgs, '-in', join(dir, 'plain.pem'), '-out', join(dir, 'key.pem'), '-passout', `file:${join(dir, 'pass')}`]);
  return { dir, key: 'service', certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem'), keyPassphraseFile: join(dir, 'pass') };
}

/** The key's DER with its 3-byte PBKDF2 iteration count replaced in place (same length, so the structure stays valid). */
function withIterations(pem: string, from: number, to: number): string {
  const body = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const der = Buffer.from(body, 'base64');
  const needle = Buffer.from([0x02, 0x03, (from >> 16) & 0xff, (from >> 8) & 0xff, from & 0xff]);
  const at = der.indexOf(needle);
  assert.ok(at > 0, 'the iteration count is in the key');
  der.writeUIntBE(to, at + 2, 3);
  return `-----BEGIN ENCRYPTED PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END ENCRYPTED PRIVATE KEY-----\n`;
}

/** The key's DER with the outer SEQUENCE's length (a long form OpenSSL wrote in 1 or 2 bytes) rewritten, and `tail` appended. */
function withOuterLength(pem: string, length: (value: number) => number[], tail = Buffer.alloc(0)): string {
  const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');
  assert.ok(der[0] === 0x30 && (der[1] === 0x81 || der[1] === 0x82), 'OpenSSL wrote a long-form outer length');
  const bytes = der[1]! & 0x7f;
  const rewritten = Buffer.concat([Buffer.from([0x30, ...length(der.readUIntBE(2, bytes))]), der.subarray(2 + bytes), tail]);
  return `-----BEGIN ENCRYPTED PRIVATE KEY-----\n${rewritten.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END ENCRYPTED PRIVATE KEY-----\n`;
}

/** This thread's CPU time (Node ≥ 22.x; the installed type definitions predate it). */
const threadCpuUsage = (previous?: NodeJS.CpuUsage): NodeJS.CpuUsage =>
  (process as unknown as { threadCpuUsage(previous?: NodeJS.CpuUsage): NodeJS.CpuUsage }).threadCpuUsage(previous);

describe('client key decryption is bounded', () => {
  it('a key whose derivation costs more than the bound is refused by its iteration count, with a message, before anything decrypts it', async (t) => {
    const files = await pair(t, ['-v2', 'aes-256-cbc', '-iter', String(MAX_KEY_ITERATIONS + 1)]);
    assert.throws(() => loadClientCertificateSync(files, new Date()), /^Error: service\.keyFile \S+key\.pem is encrypted with 1,000,001 key-derivation iterations; at most 1,000,000 are accepted/);
    // The header now claims 8,388,607 iterations (~2 s of CPU per decryption on a fast core): were it
    // decrypted, the run would take seconds and end in a wrong-passphrase error, not this message.
    writeFileSync(files.keyFile, withIterations(readFileSync(files.keyFile, 'utf8'), MAX_KEY_ITERATIONS + 1, 0x7fffff));
    assert.deepEqual(keyDerivation(readFileSync(files.keyFile, 'utf8')), { kdf: 'pbkdf2', iterations: 8_388_607 });
    await assert.rejects(loadClientCertificate(files, new Date()), /is encrypted with 8,388,607 key-derivation iterations; at most 1,000,000 are accepted \(each decryption would take that much CPU\): re-encrypt it/);
  });

  it('a length padded with leading zero bytes, as OpenSSL reads it, hides no iteration count; an unreadable header is refused, not decrypted', async (t) => {
    const files = await pair(t, ['-v2', 'aes-256-cbc', '-iter', '100000']);
    const original = readFileSync(files.keyFile, 'utf8');
    // OpenSSL skips the zeros: the padded key still decrypts with its passphrase (100,000 iterations: quick).
    const padded = withOuterLength(original, (length) => [0x85, 0, 0, 0, length >> 8, length & 0xff]);
    assert.equal(createPrivateKey({ key: padded, passphrase: 'correct horse' }).asymmetricKeyType, 'ec');
    // The same padding around 5,000,000 iterations: read, and refused before decrypting.
    writeFileSync(files.keyFile, withOuterLength(withIterations(original, 100_000, 5_000_000), (length) => [0x85, 0, 0, 0, length >> 8, length & 0xff]));
    assert.deepEqual(keyDerivation(readFileSync(files.keyFile, 'utf8')), { kdf: 'pbkdf2', iterations: 5_000_000 });
    assert.throws(() => loadClientCertificateSync(files, new Date()), /is encrypted with 5,000,000 key-derivation iterations; at most 1,000,000 are accepted/);
    await assert.rejects(loadClientCertificate(files, new Date()), /is encrypted with 5,000,000 key-derivation iterations/);
    // A header this does not read (an indefinite BER length here) is refused with a message, never handed to OpenSSL.
    writeFileSync(files.keyFile, withOuterLength(withIterations(original, 100_000, 5_000_000), () => [0x80], Buffer.from([0, 0])));
    assert.equal(keyDerivation(readFileSync(files.keyFile, 'utf8')), 'unreadable');
    assert.throws(() => loadClientCertificateSync(files, new Date()), /^Error: service\.keyFile \S+key\.pem is an ENCRYPTED PRIVATE KEY whose encryption header cannot be read/);
    await assert.rejects(loadClientCertificate(files, new Date()), /whose encryption header cannot be read/);
  });

  it('a scrypt key beyond the bound is refused; OpenSSL\'s defaults (PBKDF2 2,048 iterations, scrypt N=16384 r=8 p=1) are read and accepted', async (t) => {
    const costly = await pair(t, ['-scrypt', '-scrypt_N', '16384', '-scrypt_r', '8', '-scrypt_p', '9']);
    assert.throws(() => loadClientCertificateSync(costly, new Date()), /is encrypted with scrypt N=16384 r=8 p=9; at most N·r·p = 1,048,576 is accepted/);
    const scrypt = await pair(t, ['-scrypt']);
    assert.deepEqual(keyDerivation(readFileSync(scrypt.keyFile, 'utf8')), { kdf: 'scrypt', n: 16384, r: 8, p: 1 });
    assert.equal(loadClientCertificateSync(scrypt, new Date()).subject, 'CN=costly key');
    const pbkdf2 = await pair(t, ['-v2', 'aes-256-cbc']);
    assert.deepEqual(keyDerivation(readFileSync(pbkdf2.keyFile, 'utf8')), { kdf: 'pbkdf2', iterations: 2048 });
    assert.equal((await loadClientCertificate(pbkdf2, new Date())).subject, 'CN=costly key');
  });

  it('an encrypted key is decrypted off the main thread, and once per change: an unchanged re-read reuses it', async (t) => {
    // Just under the bound: the most a key may cost, all of it spent on a worker thread.
    const files = await pair(t, ['-v2', 'aes-256-cbc', '-iter', String(MAX_KEY_ITERATIONS - 100_000)]);
    const main0 = threadCpuUsage();
    const all0 = process.cpuUsage();
    const first = await loadClientCertificate(files, new Date());
    const main = threadCpuUsage(main0);
    const all = process.cpuUsage(all0);
    const mainMs = (main.user + main.system) / 1000;
    const allMs = (all.user + all.system) / 1000;
    // The derivation is most of the work; had it run here, this thread would have spent it.
    assert.ok(mainMs < allMs / 2, `the main thread spent ${mainMs.toFixed(0)} ms of the ${allMs.toFixed(0)} ms the decryption took`);
    assert.match(first.contextKeyPem, /^-----BEGIN PRIVATE KEY-----/, 'the TLS context gets the decrypted key, never the passphrase again');
    assert.equal(await loadClientCertificate(files, new Date(), first), first, 'the same bytes give back the same pair, undecrypted');
    writeFileSync(files.keyPassphraseFile!, 'wrong\n');
    await assert.rejects(loadClientCertificate(files, new Date(), first), /cannot be decrypted with service\.keyPassphraseFile/);
  });

  it('a decryption on its worker has a deadline and ends on stop; a process awaiting it (a start-up) is kept alive until it answers', async (t) => {
    const files = await pair(t, ['-v2', 'aes-256-cbc', '-iter', String(MAX_KEY_ITERATIONS - 100_000)]);
    const pem = readFileSync(files.keyFile, 'utf8');
    // Past the deadline (0 ms: the worker has not even started), the worker is ended and the promise rejects.
    await assert.rejects(decryptKeyOffThread(pem, 'correct horse', { timeoutMs: 0 }), (err: unknown) => err instanceof KeyDecryptionError && err.code === 'timed out');
    // A stop (the process's run group aborts its signal) ends a decryption under way, with a message.
    const stopping = new AbortController();
    const loading = loadClientCertificate(files, new Date(), undefined, { signal: stopping.signal });
    setImmediate(() => stopping.abort());
    await assert.rejects(loading, /^Error: service\.keyFile \S+key\.pem: decryption given up, the process is stopping$/);
    await assert.rejects(loadClientCertificate(files, new Date(), undefined, { signal: stopping.signal }), /decryption given up/);
    // A process that has nothing but a decryption under way (a start-up before its listeners bind)
    // waits for it: an unref'd worker let Node 22 end the process with the promise still pending.
    const script = `import { decryptKeyOffThread } from ${JSON.stringify(join(process.cwd(), 'src/shared/key-decryption.ts'))};
      import { readFileSync } from 'node:fs';
      let settled = 'no';
      decryptKeyOffThread(readFileSync(${JSON.stringify(files.keyFile)}, 'utf8'), 'correct horse').then(() => (settled = 'resolved'), (e) => (settled = 'rejected ' + e.code));
      process.on('exit', () => process.stdout.write('settled at exit: ' + settled));`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(out, 'settled at exit: resolved');
  });

  it('a start-up step that fails because a stop was requested reads as the stop (run group)', async () => {
    const group = new RunGroup({ warn: () => undefined });
    const signal = group.signal;
    assert.equal(signal.aborted, false);
    const step = group.started(new Promise<never>((_resolve, reject) => signal.addEventListener('abort', () => reject(new Error('given up')))), () => undefined);
    group.requestStop();
    await assert.rejects(step, StoppedDuringStartError);
    await assert.rejects(group.started(Promise.reject(new Error('other')), () => undefined), StoppedDuringStartError);
    const fresh = new RunGroup({ warn: () => undefined });
    await assert.rejects(fresh.started(Promise.reject(new Error('a real failure')), () => undefined), /a real failure/);
  });
});
