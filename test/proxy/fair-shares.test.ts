import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { request, type ClientRequest } from 'node:http';
import { describe, it } from 'node:test';
import { ENGINES, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/**
 * The fair shares do not depend on addresses alone (docs/design.md, "Request bodies"): several
 * loopback addresses of one process cannot take the service pool from everyone else (streams may
 * use only ¾ of it), and many uploads of one app behind the address every local app shares cannot
 * take another app's replay (a small body received whole has its room in the reserve) nor keep
 * its small POST waiting behind their streams.
 */

const CHUNK = 2560; // written once a second: 2.5 KB/s, above the 1024 bytes/s minimum

/** An upload from `localAddress` that keeps going slowly for as long as the test lasts. */
function slowUpload(port: number, localAddress: string, headers: Record<string, string>): { req: ClientRequest; started: Promise<void>; stop(): void } {
  const req = request({ host: '127.0.0.1', port, localAddress, method: 'POST', path: '/pub/b2b/v1/echo', headers, agent: false });
  req.on('error', () => undefined);
  req.on('response', (res) => res.resume());
  const chunk = Buffer.alloc(CHUNK, 'u');
  const started = new Promise<void>((resolve) => req.write(chunk, () => resolve()));
  const timer = setInterval(() => req.write(chunk), 1000);
  return { req, started, stop: () => { clearInterval(timer); req.destroy(); } };
}

async function metric(s: RunningSidecar, line: RegExp): Promise<number> {
  const match = line.exec(await s.sidecar.registry.metrics());
  assert.ok(match, `metric ${line} not found`);
  return Number(match[1]);
}

/** A metric while waiting: 0 when absent, so that the wait itself never fails. */
async function metricOr0(s: RunningSidecar, line: RegExp): Promise<number> {
  return Number(line.exec(await s.sidecar.registry.metrics())?.[1] ?? 0);
}

/** A stuck request must not hold the teardown for the default 30 s drain. */
const QUICK_STOP = { shutdown: { timeoutSeconds: 1 } };

/** `promise`, or 'timed out' after `ms`: code that starves the client must fail here, not hang the test. */
function within<T>(ms: number, promise: Promise<T>): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed out'>((resolve) => { timer = setTimeout(() => resolve('timed out'), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function until(check: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check()) && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
}

for (const engine of ENGINES) {
  describe(`fair shares that do not depend on addresses alone (engine ${engine})`, () => {
    it('four loopback sources with 128 slow streamed uploads leave another client\'s GET answered within a second', async (t) => {
      const up = await startUpstream((req, res) => {
        req.resume();
        req.on('end', () => res.end('{"ok":true}'));
      });
      t.after(() => up.close());
      // The default pool (128) and share (¼ per source); the addresses a container example allows.
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { ...QUICK_STOP, proxy: { timeoutMs: 4000 }, guard: { allow: ['127.0.0.0/8'] } } });
      t.after(() => s.stop());
      await waitReady(s);
      const sources = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'];
      const uploads = sources.flatMap((source) => Array.from({ length: 32 }, () => slowUpload(s.port, source, { 'transfer-encoding': 'chunked' })));
      t.after(() => { for (const u of uploads) u.stop(); });
      await Promise.all(uploads.map((u) => u.started));
      // 32 each would be 128: the whole pool. Streams stop at ¾ of it; wait for as many as the
      // code lets through (on code without the bound, all 128), so the GET does not race them.
      await until(() => up.open >= 128, 1500);

      const began = Date.now();
      const answer = await within(5000, send(s.port, { path: '/pub/b2b/v1/objects' }));
      const ms = Date.now() - began;
      const status = answer === 'timed out' ? answer : answer.status;
      t.diagnostic(`the other client's GET: ${status} after ${ms} ms`);
      assert.equal(status, 200);
      assert.ok(ms < 1000, `answered after ${ms} ms`);
      assert.equal(up.open, 96, 'streams hold ¾ of proxy.maxSockets, whichever addresses they come from');
      assert.equal(await metric(s, /^b2b_sidecar_streamed_uploads\{state="active"\} (\d+)$/m), 96);
      assert.equal(await metric(s, /^b2b_sidecar_streamed_uploads\{state="waiting"\} (\d+)$/m), 32);
    });

    it('one address with 48 slow 1 MiB uploads and 32 slow chunked ones: another client\'s small POST is replayed after a revocation, within a second', async (t) => {
      const sim = await startSimulator();
      t.after(() => sim.stop());
      const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: QUICK_STOP });
      t.after(() => s.stop());
      await waitReady(s);
      const whole = Array.from({ length: 48 }, () => slowUpload(s.port, '127.0.0.1', { 'content-length': String(1024 * 1024) }));
      const chunked = Array.from({ length: 32 }, () => slowUpload(s.port, '127.0.0.1', { 'transfer-encoding': 'chunked' }));
      const uploads = [...whole, ...chunked];
      t.after(() => { for (const u of uploads) u.stop(); });
      await Promise.all(uploads.map((u) => u.started));
      // Every 1 MiB upload booked its copy or was refused one (and streams instead).
      const held = () => metricOr0(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m);
      const dropped = (reason: string) => metricOr0(s, new RegExp(`^b2b_sidecar_replay_capture_dropped_total\\{reason="${reason}"\\} (\\d+)$`, 'm'));
      await until(async () => Math.round((await held()) / (1024 * 1024)) + (await dropped('source_limit')) >= 48, 3000);
      await until(async () => (await metricOr0(s, /^b2b_sidecar_streamed_uploads\{state="active"\} (\d+)$/m)) >= 32, 3000);

      // The address is past its share of the budget: in general, its next body gets no copy.
      assert.ok((await dropped('source_limit')) >= 1);

      sim.faults.revokeAll();
      const body = '{"a":1}';
      const began = Date.now();
      const answer = await within(5000, send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', body, headers: { 'content-type': 'application/json' } }));
      const ms = Date.now() - began;
      t.diagnostic(`the other client's POST: ${answer === 'timed out' ? answer : answer.status} after ${ms} ms`);
      assert.notEqual(answer, 'timed out', 'the POST was never answered');
      if (answer === 'timed out') return;
      assert.equal(answer.status, 200, 'replayed with the renewed token, not the 401 passed back');
      assert.equal(answer.json().bodySha256, createHash('sha256').update(body).digest('hex'));
      assert.ok(ms < 1000, `answered after ${ms} ms`);
      // The service did refuse it once: the 200 is the replay's.
      assert.ok((await metric(s, /^b2b_sidecar_upstream_unauthorized_total (\d+)$/m)) >= 1);
    });
  });
}
