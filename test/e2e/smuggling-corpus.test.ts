import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { innocent, smugglingCorpus, type Probe } from '../fixtures/smuggling/corpus.js';
import { rawExchange, type RawResult } from '../helpers/raw-client.js';
import { CREDENTIALS, ENGINES, send, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * Issue 12 §3: about 1,700 request-smuggling probes from public research (test/fixtures/smuggling,
 * SOURCES.md), each followed by an innocent request on the same connection, on both engines with
 * request logging on and off. The upstream must see exactly the requests the sidecar answered,
 * each with the token, none glued to another's bytes, and the sidecar must stay up and bounded.
 */

interface Seen { seq: number; method: string; url: string; headers: IncomingHttpHeaders; body: string }

/** A recording HTTPS service: numbers every request, answers with the number, counts parse errors. */
async function startRecorder() {
  const tls = await testTls();
  const seen: Seen[] = [];
  const parseErrors: string[] = [];
  let tokens = 0;
  const server: Server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/pub/b2b/v1/auth/gentoken') {
        tokens++;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ token: `corpus-token-${tokens}`, refreshToken: null, aliveSecondsTtl: 900 }));
        return;
      }
      const seq = seen.length + 1;
      seen.push({ seq, method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('latin1') });
      res.writeHead(200, { 'content-type': 'text/plain', 'x-upstream-seq': String(seq) });
      res.end('ok');
    });
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // A connection cut mid-request (the sidecar aborting an upload whose client failed) is not
    // a parse error; anything else means the sidecar sent bytes that are not HTTP.
    if (err.code !== 'ECONNRESET' && err.code !== 'HPE_INVALID_EOF_STATE') parseErrors.push(`${err.code}: ${err.message}`);
    socket.destroy();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `https://localhost:${(server.address() as AddressInfo).port}`,
    seen,
    get parseErrors() { return parseErrors; },
    close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }),
  };
}

/** Runs `task` over `items` with at most `limit` at once. */
async function pool<T, R>(items: T[], limit: number, task: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await task(items[i]!, i);
    }
  }));
  return results;
}

const TARGET = /^\/pub\/b2b\/v1\/echo\/(?:p|smuggled|innocent)-(\d+)(?:\?cb=\d+)?$/;
const corpus: Probe[] = smugglingCorpus();

for (const engine of ENGINES) {
  for (const logRequests of [false, true]) {
    describe(`smuggling corpus (engine ${engine}, log.requests ${logRequests})`, { timeout: 60_000 }, () => {
      let up: Awaited<ReturnType<typeof startRecorder>>;
      let s: RunningSidecar;
      let answers: RawResult[] = [];
      let rssBefore = 0;

      before(async () => {
        up = await startRecorder();
        s = await startSidecar({ baseUrl: up.url, engine, overrides: { log: { requests: logRequests } } });
        await waitReady(s);
        rssBefore = process.memoryUsage().rss;
        answers = await pool(corpus, 16, (probe, n) => rawExchange(s.port, probe.request(n) + innocent(n), 5000));
      });
      after(async () => {
        await s.stop();
        await up.close();
      });

      it('never leaves a client connection hanging', () => {
        const hung = corpus.filter((_, n) => answers[n]!.timedOut).map((p) => p.name);
        assert.deepEqual(hung, []);
      });

      it('the upstream saw exactly the requests the sidecar answered, per client connection', () => {
        const upstreamByProbe = new Map<number, number[]>();
        for (const r of up.seen) {
          const m = TARGET.exec(r.url);
          assert.ok(m, `the upstream received a request for ${JSON.stringify(r.url)}: bytes of another request`);
          const n = Number(m[1]);
          upstreamByProbe.set(n, [...(upstreamByProbe.get(n) ?? []), r.seq]);
        }
        const mismatches: string[] = [];
        corpus.forEach((probe, n) => {
          const answered = [...answers[n]!.text.matchAll(/x-upstream-seq: (\d+)/gi)].map((m) => Number(m[1]));
          const forwarded = upstreamByProbe.get(n) ?? [];
          if (answered.join() !== forwarded.join()) mismatches.push(`${probe.name}: answered ${answered.join() || '-'}, upstream ${forwarded.join() || '-'}`);
        });
        assert.deepEqual(mismatches, []);
        assert.deepEqual(up.parseErrors, [], 'the sidecar sent the upstream bytes it could not parse');
      });

      it('every upstream request carried the token and the ApiKey, and no body held the next request', () => {
        const token = s.sidecar.tokens!.current()!.value;
        for (const r of up.seen) {
          assert.equal(r.headers['authorization'], `Bearer ${token}`, `${r.method} ${r.url} went without the token`);
          assert.equal(r.headers['apikey'], CREDENTIALS.apiKey);
          assert.equal(r.body.includes('/innocent-'), false, `${r.url} carried the innocent request in its body`);
          assert.equal(r.body.includes(CREDENTIALS.apiKey), false);
        }
      });

      it('answers the innocent request after every probe the service answered on a kept-alive connection', () => {
        const lost: string[] = [];
        let kept = 0;
        corpus.forEach((probe, n) => {
          const text = answers[n]!.text;
          const head = text.slice(0, text.indexOf('\r\n\r\n'));
          if (!/x-upstream-seq:/i.test(head) || /\r\nconnection: close/i.test(head)) return;
          kept++;
          if (!up.seen.some((r) => r.url === `/pub/b2b/v1/echo/innocent-${n}`)) lost.push(probe.name);
        });
        assert.ok(kept > 0, 'some probes are legitimate requests the service answers');
        assert.deepEqual(lost, []);
      });

      it('stays alive, holds nothing in flight and stays bounded after every probe', async () => {
        const res = await send(s.port, { path: '/pub/b2b/v1/echo/p-0' });
        assert.equal(res.status, 200);
        const metrics = await s.sidecar.registry.metrics();
        assert.match(metrics, /^b2b_sidecar_inflight_requests 0$/m);
        const grown = process.memoryUsage().rss - rssBefore;
        assert.ok(grown < 256 * 1024 * 1024, `memory grew by ${Math.round(grown / 1048576)} MiB over the corpus`);
        for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, s.sidecar.tokens!.current()!.value]) {
          assert.equal(s.log.text().includes(secret), false, 'a secret appeared in the logs');
        }
      });
    });
  }
}
