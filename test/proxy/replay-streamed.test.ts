import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, it } from 'node:test';
import { ENGINES, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/** Uploads `parts` as a chunked body (no Content-Length) or with one, and returns status and JSON. */
function upload(port: number, parts: Buffer[], framing: 'chunked' | 'length'): Promise<{ status: number; json: Record<string, unknown> }> {
  const total = parts.reduce((n, p) => n + p.length, 0);
  return new Promise((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, method: 'POST', path: '/pub/b2b/v1/echo', agent: false,
      headers: framing === 'length' ? { 'content-length': total } : { 'transfer-encoding': 'chunked' },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString() || '{}') as Record<string, unknown> }));
    });
    // Node's client stops writing (EPIPE) once an answer ended before the whole body was sent.
    let answered = false;
    req.on('response', () => (answered = true));
    req.on('error', (err) => { if (!answered) reject(err); });
    // Written over several turns of the event loop, as a streaming client does.
    let i = 0;
    const next = () => {
      if (req.destroyed) return;
      if (i === parts.length) return void req.end();
      req.write(parts[i++]);
      setImmediate(next);
    };
    next();
  });
}

/** An upload of `count` × `size` bytes on a raw connection, then a GET on it; everything read back. */
async function rawUpload(port: number, count: number, size: number, framing: 'chunked' | 'length', until = /"ok":true/): Promise<string> {
  const socket = connect(port, '127.0.0.1');
  let got = '';
  socket.on('data', (d: Buffer) => (got += d.toString('latin1')));
  const framingHeader = framing === 'chunked' ? 'Transfer-Encoding: chunked' : `Content-Length: ${count * size}`;
  socket.write(`POST /upload HTTP/1.1\r\nHost: x\r\n${framingHeader}\r\n\r\n`);
  for (let i = 0; i < count; i++) {
    const chunk = Buffer.alloc(size, 7);
    socket.write(framing === 'chunked' ? Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]) : chunk);
    await new Promise((r) => setImmediate(r));
  }
  if (framing === 'chunked') socket.write('0\r\n\r\n');
  socket.write('GET /second HTTP/1.1\r\nHost: x\r\n\r\n');
  const deadline = Date.now() + 5000;
  while (!until.test(got) && Date.now() < deadline && !socket.destroyed) await new Promise((r) => setTimeout(r, 10));
  socket.destroy();
  return got;
}

const sha256 = (parts: Buffer[]) => createHash('sha256').update(Buffer.concat(parts)).digest('hex');
const parts = (count: number, size: number) => Array.from({ length: count }, (_, i) => Buffer.alloc(size, 65 + (i % 26)));

async function metric(s: RunningSidecar, line: RegExp): Promise<number> {
  const match = line.exec(await s.sidecar.registry.metrics());
  assert.ok(match, `metric ${line} not found`);
  return Number(match[1]);
}

for (const engine of ENGINES) {
  describe(`streamed uploads and the 401 replay (engine ${engine})`, () => {
    for (const framing of ['chunked', 'length'] as const) {
      for (const [what, size] of [['below', 16 * 1024 - 1000], ['at', 16 * 1024]] as const) {
        it(`replays a ${framing} upload ${what} the limit after the service revoked the token, with the same body`, async () => {
          const sim = await startSimulator();
          const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { proxy: { replayBodyLimitBytes: 16 * 1024 }, log: { requests: true } } });
          try {
            await waitReady(s);
            sim.faults.revokeAll();
            const body = [...parts(3, 4096), Buffer.alloc(size - 3 * 4096, 'z')];
            const res = await upload(s.port, body, framing);
            assert.equal(res.status, 200, 'the client never sees the 401');
            assert.equal(res.json.bodyBytes, size);
            assert.equal(res.json.bodySha256, sha256(body));
            assert.equal(await metric(s, /^b2b_sidecar_upstream_unauthorized_total (\d+)$/m), 1);
            assert.equal(await metric(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m), 0, 'the copy is given back');
          } finally {
            await s.stop();
            await sim.stop();
          }
        });
      }

      it(`replays concurrent ${framing} uploads byte for byte, each from its own copy`, async () => {
        const sim = await startSimulator();
        const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { proxy: { replayBodyLimitBytes: 128 * 1024 } } });
        try {
          await waitReady(s);
          // A revoked token: 12 uploads of distinct bytes are copied side by side and all replayed.
          sim.faults.revokeAll();
          const bodies = Array.from({ length: 12 }, (_, i) => Array.from({ length: 5 }, (_, j) => randomBytes(3000 + i * 1711 + j * 2903)));
          const answers = await Promise.all(bodies.map((body) => upload(s.port, body, framing)));
          for (const [i, res] of answers.entries()) {
            assert.equal(res.status, 200, `upload ${i}`);
            assert.equal(res.json.bodySha256, sha256(bodies[i]!), `upload ${i}: the replayed body differs`);
          }
          assert.ok(await metric(s, /^b2b_sidecar_upstream_unauthorized_total (\d+)$/m) >= 1);
          assert.equal(await metric(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m), 0, 'every copy is given back');
        } finally {
          await s.stop();
          await sim.stop();
        }
      });

      it(`passes the 401 back for a ${framing} upload above the limit, and renews the token for the next request`, async () => {
        const sim = await startSimulator();
        const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { proxy: { replayBodyLimitBytes: 16 * 1024 } } });
        try {
          await waitReady(s);
          const issued = sim.stats.tokensIssued;
          sim.faults.revokeAll();
          const res = await upload(s.port, parts(5, 4096), framing);
          assert.equal(res.status, 401);
          while (sim.stats.tokensIssued === issued) await new Promise((r) => setTimeout(r, 10));
          assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo' })).status, 200);
          if (framing === 'chunked') assert.equal(await metric(s, /^b2b_sidecar_replay_capture_dropped_total\{reason="request_limit"\} (\d+)$/m), 1);
          assert.equal(await metric(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m), 0);
        } finally {
          await s.stop();
          await sim.stop();
        }
      });
    }

    it('survives a client that aborts mid-upload with request logging on, and gives its copy back', async () => {
      const up = await startUpstream((req, res) => { req.resume(); req.on('end', () => res.end('{}')); });
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { log: { requests: true } } });
      try {
        await waitReady(s);
        await new Promise<void>((resolve) => {
          const req = request({ host: '127.0.0.1', port: s.port, method: 'POST', path: '/upload', agent: false, headers: { 'transfer-encoding': 'chunked' } });
          req.on('error', () => resolve());
          req.write(Buffer.alloc(8192, 1));
          setTimeout(() => { req.destroy(); resolve(); }, 100);
        });
        await up.waitOpen(0);
        while (!/^b2b_sidecar_inflight_requests 0$/m.test(await s.sidecar.registry.metrics())) await new Promise((r) => setTimeout(r, 10));
        assert.equal(await metric(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m), 0);
        // Still serving: the access log line after the abort did not crash the process (docs/traps.md T29).
        assert.equal((await send(s.port, { path: '/after' })).status, 200);
        const logged = s.log.lines().filter((l) => l.message === 'request');
        assert.ok(logged.length >= 2);
        assert.ok(logged.every((l) => l.source === '127.0.0.1'), 'the source was captured when the request arrived');
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('logs chunked and oversized uploads with request logging on without crashing (docs/traps.md T29)', async () => {
      const up = await startUpstream((req, res) => { req.resume(); req.on('end', () => res.end('{}')); });
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { log: { requests: true }, proxy: { replayBodyLimitBytes: 1024 } } });
      try {
        await waitReady(s);
        for (const [framing, count] of [['chunked', 1], ['chunked', 4], ['length', 1], ['length', 4]] as const) {
          const res = await upload(s.port, parts(count, 1000), framing);
          assert.equal(res.status, 200, `${framing} ×${count}`);
        }
        await new Promise((r) => setTimeout(r, 50));
        assert.equal((await send(s.port, { path: '/alive' })).status, 200);
        assert.equal(s.log.lines().filter((l) => l.message === 'request' && l.source === '127.0.0.1').length, 5);
      } finally {
        await s.stop();
        await up.close();
      }
    });

    it('holds at most proxy.replayBufferTotalBytes for replays under 50 concurrent uploads', async () => {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let bodiesIn = 0;
      const up = await startUpstream((req, res) => {
        req.resume();
        req.on('end', () => { bodiesIn++; void gate.then(() => res.end('{}')); });
      });
      const cap = 64 * 1024;
      // A share of 1: this one source may use the whole budget, so only the cap bounds it.
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { proxy: { replayBodyLimitBytes: 16 * 1024, replayBufferTotalBytes: cap, streamedUploadShare: 1 } } });
      try {
        await waitReady(s);
        const uploads = Array.from({ length: 50 }, (_, i) => upload(s.port, parts(2, 4096), i % 2 ? 'chunked' : 'length'));
        while (bodiesIn < 50) await new Promise((r) => setTimeout(r, 10));
        const held = await metric(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m);
        // The reserve (rooms of a few bytes per connection here) is for small bodies received
        // whole; these 8 KiB copies book in the rest.
        const general = cap - await metric(s, /^b2b_sidecar_share_limit\{limit="replay_reserved_bytes"\} (\d+)$/m);
        assert.ok(held <= cap, `${held} bytes held, cap ${cap}`);
        assert.ok(held >= general - 8192, `the budget is used up to the cap (${held})`);
        const dropped = await metric(s, /^b2b_sidecar_replay_capture_dropped_total\{reason="global_limit"\} (\d+)$/m);
        assert.ok(dropped >= 50 - general / 8192, `${dropped} uploads lost their replay to the cap`);
        release();
        const answers = await Promise.all(uploads);
        assert.ok(answers.every((a) => a.status === 200), 'requests beyond the cap are still served');
        assert.equal(await metric(s, /^b2b_sidecar_replay_buffer_bytes (\d+)$/m), 0);
      } finally {
        release();
        await s.stop();
        await up.close();
      }
    });

    it('releases the upstream connection when the service answers before reading an upload (docs/traps.md T33)', async () => {
      // Answers at once and never reads the body: the upload can never finish upstream.
      const up = await startUpstream((req, res) => {
        if (req.method === 'GET') return void res.end('{"ok":true}');
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"early":true}');
      });
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { proxy: { maxSockets: 2, replayBodyLimitBytes: 0, timeoutMs: 2000 } } });
      try {
        await waitReady(s);
        for (let i = 0; i < 4; i++) {
          // On one client connection: the early answer, the rest of the upload, then a GET.
          const answers = await rawUpload(s.port, 64, 16 * 1024, i % 2 ? 'chunked' : 'length');
          assert.match(answers, /^HTTP\/1\.1 200 [^]*"early":true[^]*HTTP\/1\.1 200 [^]*"ok":true/, 'the client read the early answer and kept its connection');
        }
        const after = await send(s.port, { path: '/after' });
        assert.equal(after.status, 200, 'a later request still finds an upstream connection (no 504)');
      } finally {
        await s.stop();
        await up.close();
      }
    });

    for (const framing of ['length', 'chunked'] as const) {
      it(`reads the rest of a ${framing} upload it answered itself (no token, service gone), so the connection serves the next request`, async () => {
        const up = await startUpstream((req, res) => { req.resume(); req.on('end', () => res.end('{}')); });
        const s = await startSidecar({ baseUrl: up.url, engine, overrides: { service: { timeoutMs: 1000 } } });
        try {
          await waitReady(s);
          await up.close(); // the token is held; the service is gone
          const twoAnswers = /HTTP\/1\.1 \d{3}[^]*HTTP\/1\.1 \d{3} [^]*\}/;
          const answers = await rawUpload(s.port, 16, 16 * 1024, framing, twoAnswers);
          assert.match(answers, /^HTTP\/1\.1 502 [^]*HTTP\/1\.1 502 /, 'both the upload and the GET after it were answered');
        } finally {
          await s.stop();
        }
      });
    }

    it('reads the rest of an upload answered 503 for want of a token, so the connection serves the next request', async () => {
      // Nothing listens at the service address: no token is ever obtained.
      const s = await startSidecar({ baseUrl: 'https://localhost:1', engine });
      try {
        const answers = await rawUpload(s.port, 16, 16 * 1024, 'length', /HTTP\/1\.1 503[^]*HTTP\/1\.1 503 [^]*\}/);
        assert.match(answers, /^HTTP\/1\.1 503 [^]*HTTP\/1\.1 503 /);
      } finally {
        await s.stop();
      }
    });
  });
}
