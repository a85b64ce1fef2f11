import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { ENGINES, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';

const LIMIT = 64 * 1024;

/** An upload from `localAddress` that announces `length` bytes and sends only `first`: it holds whatever it booked. */
function stalled(port: number, localAddress: string, length: number, first: Buffer) {
  const req = request({ host: '127.0.0.1', port, localAddress, method: 'POST', path: '/pub/b2b/v1/echo', agent: false, headers: { 'content-length': String(length) } });
  req.on('error', () => undefined);
  req.write(first);
  return req;
}

/** A whole upload from `localAddress`; resolves with the status and the echo. */
function upload(port: number, localAddress: string, body: Buffer): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, localAddress, method: 'POST', path: '/pub/b2b/v1/echo', agent: false, headers: { 'content-length': String(body.length) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function metric(s: RunningSidecar, line: RegExp): Promise<number> {
  const match = line.exec(await s.sidecar.registry.metrics());
  assert.ok(match, `metric ${line} not found`);
  return Number(match[1]);
}

async function eventually(check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500 && !(await check()); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(await check());
}

for (const engine of ENGINES) {
  describe(`each source's share of the replay budget (engine ${engine})`, () => {
    it('one source holding many slow uploads cannot keep another source\'s upload from being replayed after a 401', async (t) => {
      const sim = await startSimulator();
      t.after(() => sim.stop());
      // A budget of four whole copies; a share of ¼: one copy's room always stays free for other
      // sources. A quarter of it (one copy's size) is the reserve for small bodies received whole,
      // one room per connection (docs/design.md, "Request bodies"): sources book in the other three.
      const s = await startSidecar({
        baseUrl: sim.baseUrl, engine,
        overrides: { proxy: { replayBodyLimitBytes: LIMIT, replayBufferTotalBytes: 4 * LIMIT, streamedUploadShare: 0.25, minUploadBytesPerSecond: 0 }, guard: { allow: ['127.0.0.0/8'] } },
      });
      t.after(() => s.stop());
      await waitReady(s);
      // 127.0.0.1 starts six uploads of a whole copy's size and sends one byte of each: first
      // come, first served, they would book the whole budget.
      const slow = Array.from({ length: 6 }, () => stalled(s.port, '127.0.0.1', LIMIT, Buffer.from('x')));
      t.after(() => { for (const r of slow) r.destroy(); });
      // Every one of them booked its copy or was refused one.
      const held = () => metric(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m);
      const dropped = (reason: string) => metric(s, new RegExp(`^b2b_sidecar_replay_capture_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm'));
      await eventually(async () => (await held()) / LIMIT + (await dropped('source_limit')) + (await dropped('global_limit')) === 6);
      // The service revokes the token; 127.0.0.2's upload meets the 401 and is replayed.
      sim.faults.revokeAll();
      const body = randomBytes(20_000);
      const res = await upload(s.port, '127.0.0.2', body);
      assert.equal(res.status, 200, 'the other source never sees the 401');
      assert.equal(res.json.bodySha256, createHash('sha256').update(body).digest('hex'));
      // (127.0.0.1's streamed uploads may meet the revocation too: at least this one did.)
      assert.ok((await metric(s, /^b2b_sidecar_upstream_unauthorized_total (\d+)$/m)) >= 1);
      assert.equal(await held(), 2 * LIMIT, 'two copies booked for 127.0.0.1: all but the reserve and the share kept for the others');
      assert.equal(await dropped('source_limit'), 4, 'the rest refused: they would have taken the last share');
      assert.equal(await dropped('global_limit'), 0);
      // The slow uploads go away: every byte is given back.
      for (const r of slow) r.destroy();
      await eventually(async () => (await held()) === 0);
    });
  });
}
