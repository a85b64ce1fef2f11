import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { CREDENTIALS, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/** Replaces a file atomically, as secret managers (and Kubernetes' symlink swap) do. */
function replaceFile(path: string, content: string): void {
  writeFileSync(`${path}.new`, content);
  renameSync(`${path}.new`, path);
}

/** Sends requests back to back until `stop` resolves; returns every status seen. */
async function traffic(s: RunningSidecar, stop: Promise<void>): Promise<number[]> {
  let done = false;
  void stop.then(() => (done = true));
  const statuses: number[] = [];
  const worker = async () => {
    for (let i = 0; i < 5000 && !done; i++) statuses.push((await send(s.port, { path: '/pub/b2b/v1/echo' })).status);
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return statuses;
}

async function until(check: () => boolean, timeoutMs = 8000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('credential rotation without restart', () => {
  it('switches to a token obtained with a changed password file under load, with zero failed requests', async () => {
    const up = await startUpstream((_req, res) => res.end('{}'));
    const dir = mkdtempSync(join(tmpdir(), 'b2b-rotate-'));
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, 'old-password-123456\n');
    const s = await startSidecar({ baseUrl: up.url, credentials: { apiKey: CREDENTIALS.apiKey, passwordFile } });
    try {
      await waitReady(s);
      const before = s.sidecar.tokens!.current()!;
      const carried = (token: string) => up.seen.some((r) => r.headers.authorization === `Bearer ${token}`);
      let rotated!: () => void;
      const load = traffic(s, new Promise<void>((r) => (rotated = r)));
      // The traffic spans the rotation: requests with the old token before it, with the new one after.
      await until(() => carried(before.value));
      replaceFile(passwordFile, 'new-password-654321\n');
      await until(() => up.tokenBodies.some((b) => b.includes('new-password-654321')));
      await until(() => s.sidecar.tokens!.current()!.generation > before.generation);
      const after = s.sidecar.tokens!.current()!;
      await until(() => carried(after.value));
      rotated();
      const statuses = await load;
      assert.deepEqual(statuses.filter((x) => x !== 200), [], 'no request failed across the rotation');
      assert.deepEqual(JSON.parse(up.tokenBodies.at(-1)!), { password: 'new-password-654321' });
      for (const secret of ['old-password-123456', 'new-password-654321']) assert.equal(s.log.text().includes(secret), false);
    } finally {
      await s.stop();
      await up.close();
    }
  });

  it('keeps the old token and says so when the new password is rejected, also on SIGHUP-style reloads', async () => {
    const sim = await startSimulator();
    const dir = mkdtempSync(join(tmpdir(), 'b2b-rotate-'));
    const passwordFile = join(dir, 'password');
    writeFileSync(passwordFile, `${CREDENTIALS.password}\n`);
    const s = await startSidecar({ baseUrl: sim.baseUrl, credentials: { apiKey: CREDENTIALS.apiKey, passwordFile } });
    try {
      await waitReady(s);
      const kept = s.sidecar.tokens!.current()!.value;
      replaceFile(passwordFile, 'wrong-password-000000\n');
      await s.sidecar.reloadCredentials();
      await until(() => s.log.lines().some((l) => /new credentials rejected/.test(String(l.message))));
      assert.equal(s.sidecar.tokens!.current()!.value, kept);
      assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo' })).status, 200);
      assert.equal(s.log.text().includes('wrong-password-000000'), false);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });
});
