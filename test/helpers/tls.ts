import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateTlsMaterial, type TlsMaterial } from '../../src/simulator/certs.js';

export interface TestTls extends TlsMaterial {
  /** Path of a file holding the CA, for the `caFile` options production uses. */
  caFile: string;
  dir: string;
}

let cached: Promise<TestTls> | undefined;

/** One test CA and localhost server certificate per test process, CA written to a temp file. */
export function testTls(): Promise<TestTls> {
  cached ??= (async () => {
    const material = await generateTlsMaterial(['localhost', '127.0.0.1', '::1']);
    const dir = mkdtempSync(join(tmpdir(), 'b2b-test-'));
    const caFile = join(dir, 'ca.pem');
    writeFileSync(caFile, material.caPem);
    return { ...material, caFile, dir };
  })();
  return cached;
}
