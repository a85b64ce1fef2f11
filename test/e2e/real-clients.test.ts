import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { FakeClock } from '../helpers/fake-clock.js';
import { clientEnv, installed, runProcess } from '../helpers/processes.js';
import { ENGINES, startSidecar, startSimulator, waitReady, type Engine, type RunningSidecar } from '../helpers/stack.js';

/**
 * Issue 12 §3: the proxy driven by the client stacks legacy hosts really run, as real processes
 * (curl, wget, Python's http.client / urllib / requests, Java's HttpURLConnection and HttpClient, Node),
 * each request sent right after the service revoked every token: none may see the 401. A stack
 * that is not installed registers no test; the last test reports which ones ran. `.ci/run`
 * installs them (curl, wget, python3-requests, default-jdk-headless).
 */

const CLIENTS = fileURLToPath(new URL('../clients/', import.meta.url));
const BODY = `a=1&b=2&text=${'x'.repeat(4000)}`;
const STREAMED_NOTE = ' — needs the streamed-upload replay';
const stacksRan = new Set<string>();

interface Outcome { case: string; status?: number; bodyBytes?: number | null; version?: string; error?: string }
interface Expectation { name: string; bodyBytes: number; streamed?: boolean }

/** Simulator + sidecar on a fake clock + a plain-HTTP control server clients call to revoke. */
interface Bench {
  s: RunningSidecar;
  url: string;
  control: string;
  /** The simulator's count of revoked tokens presented, taken at each revocation. */
  marks: number[];
  revoke(): void;
  presented(): number;
  stop(): Promise<void>;
}

async function startBench(engine: Engine): Promise<Bench> {
  const sim = await startSimulator();
  const clock = new FakeClock();
  const s = await startSidecar({ baseUrl: sim.baseUrl, engine, clock });
  await waitReady(s);
  const marks: number[] = [];
  const revoke = (): void => {
    // Revocations a few seconds apart on the sidecar's clock, like real ones: back-to-back
    // rejections of fresh tokens are, by design, read as 401s that are not about the token.
    clock.advance(5000);
    marks.push(sim.stats.revokedTokenPresented);
    sim.faults.revokeAll();
  };
  const control: Server = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/revoke') revoke();
    res.writeHead(req.url === '/revoke' ? 204 : 404).end();
  });
  await new Promise<void>((r) => control.listen(0, '127.0.0.1', r));
  return {
    s, marks, revoke,
    url: `http://127.0.0.1:${s.port}`,
    control: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
    presented: () => sim.stats.revokedTokenPresented,
    async stop() {
      await new Promise<void>((r) => control.close(() => r()));
      await s.stop();
      await sim.stop();
    },
  };
}

/** The service rejected the revoked token once after each revocation (so each request was healed, not lucky). */
function rejectionsPerCase(bench: Bench, fromMark: number): number[] {
  const marks = [...bench.marks.slice(fromMark), bench.presented()];
  return marks.slice(1).map((m, i) => m - marks[i]!);
}

function parseLines(stdout: string): Outcome[] {
  return stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Outcome);
}

/** One `it` per case of a client program that ran all its cases in one process (`run` fills `results`). */
function caseTests(stack: string, expectations: Expectation[], results: () => { outcomes: Outcome[]; rejections: number[] }): void {
  for (const expected of expectations) {
    it(`${stack}: ${expected.name} succeeds right after a revocation${expected.streamed ? STREAMED_NOTE : ''}`, () => {
      const { outcomes, rejections } = results();
      const outcome = outcomes.find((o) => o.case === expected.name);
      assert.ok(outcome, `${expected.name} printed no result`);
      assert.equal(outcome.error, undefined);
      assert.equal(outcome.status, 200, `${expected.name} got ${outcome.status} after a revocation`);
      assert.equal(outcome.bodyBytes, expected.bodyBytes, 'the service received the whole body');
      assert.ok((rejections[outcomes.indexOf(outcome)] ?? 0) >= 1, 'the revoked token was rejected first (the replay healed it)');
    });
  }
}

for (const engine of ENGINES) {
  describe(`real client stacks through the sidecar (engine ${engine})`, { timeout: 120_000 }, () => {
    let bench: Bench;
    before(async () => { bench = await startBench(engine); });
    after(async () => { await bench.stop(); });

    describe('node', () => {
      const expectations: Expectation[] = [
        { name: 'http GET', bodyBytes: 0 },
        { name: 'http POST Content-Length', bodyBytes: BODY.length },
        { name: 'http POST stream (chunked)', bodyBytes: BODY.length, streamed: true },
      ];
      let results = { outcomes: [] as Outcome[], rejections: [] as number[] };
      before(async () => {
        const from = bench.marks.length;
        const run = await runProcess(process.execPath, [`${CLIENTS}node-clients.mjs`], { env: clientEnv({ SIDECAR: bench.url, CONTROL: bench.control }) });
        assert.equal(run.code, 0, run.stderr);
        results = { outcomes: parseLines(run.stdout), rejections: rejectionsPerCase(bench, from) };
        stacksRan.add('node');
      });
      caseTests('node', expectations, () => results);
    });

    if (installed('curl')) {
      describe('curl', () => {
        /** Runs curl, revoking every token first unless `revoke` is false; returns status, echo and HTTP version. */
        async function curl(args: string[], options: { input?: Buffer | string; revoke?: boolean } = {}) {
          const before = bench.presented();
          if (options.revoke !== false) bench.revoke();
          const run = await runProcess('curl', ['-sS', '--noproxy', '*', '-o', '-', '-w', '\n%{http_code} %{http_version}', ...args, `${bench.url}/pub/b2b/v1/echo/curl`], { input: options.input });
          stacksRan.add('curl');
          assert.equal(run.code, 0, run.stderr);
          const lines = run.stdout.split('\n');
          const [status, version] = lines.pop()!.split(' ');
          const echo = JSON.parse(lines.join('\n') || '{}') as { bodyBytes?: number; method?: string };
          return { status: Number(status), version, echo, rejected: bench.presented() - before };
        }
        const healed = (r: { status: number; rejected: number }) => {
          assert.equal(r.status, 200, `got ${r.status} after a revocation`);
          assert.ok(r.rejected >= 1, 'the revoked token was rejected first (the replay healed it)');
        };

        it('curl: GET succeeds right after a revocation', async () => {
          const r = await curl([]);
          healed(r);
          assert.equal(r.echo.method, 'GET');
        });
        it('curl: -d succeeds right after a revocation', async () => {
          const r = await curl(['-d', 'a=1&b=2']);
          healed(r);
          assert.deepEqual([r.echo.method, r.echo.bodyBytes], ['POST', 7]);
        });
        it('curl: --data-binary of 4 KiB (Expect: 100-continue) succeeds right after a revocation', async () => {
          const r = await curl(['--data-binary', '@-'], { input: BODY });
          healed(r);
          assert.equal(r.echo.bodyBytes, BODY.length);
        });
        it("curl: -H 'Expect:' --data-binary of 4 KiB succeeds right after a revocation", async () => {
          const r = await curl(['-H', 'Expect:', '--data-binary', '@-'], { input: BODY });
          healed(r);
          assert.equal(r.echo.bodyBytes, BODY.length);
        });
        it(`curl: -T - (chunked) succeeds right after a revocation${STREAMED_NOTE}`, async () => {
          const r = await curl(['-T', '-'], { input: BODY });
          healed(r);
          assert.deepEqual([r.echo.method, r.echo.bodyBytes], ['PUT', BODY.length]);
        });
        it('curl: --http1.0 succeeds right after a revocation', async () => {
          const r = await curl(['--http1.0']);
          healed(r);
          assert.equal(r.echo.method, 'GET');
        });
        it('curl: --http2 (h2c upgrade offer) is served as HTTP/1.1 right after a revocation', async () => {
          const r = await curl(['--http2']);
          healed(r);
          assert.equal(r.version, '1.1');
          assert.equal(r.echo.method, 'GET');
        });
        it('curl: a 3 MiB file upload arrives whole (above the replay limit: no revocation before it)', async () => {
          const big = Buffer.alloc(3 * 1024 * 1024, 'b');
          const r = await curl(['--data-binary', '@-', '-H', 'Content-Type: application/octet-stream'], { input: big, revoke: false });
          assert.equal(r.status, 200);
          assert.equal(r.echo.bodyBytes, big.length);
        });
      });
    }

    if (installed('wget')) {
      describe('wget', () => {
        async function wget(args: string[]) {
          const before = bench.presented();
          bench.revoke();
          const run = await runProcess('wget', ['-q', '--no-proxy', '-O', '-', '--content-on-error', ...args, `${bench.url}/pub/b2b/v1/echo/wget`]);
          stacksRan.add('wget');
          return { code: run.code, echo: JSON.parse(run.stdout || '{}') as { method?: string; bodyBytes?: number }, rejected: bench.presented() - before };
        }
        it('wget: GET succeeds right after a revocation', async () => {
          const r = await wget([]);
          assert.equal(r.code, 0, 'wget exits 0 only on a 2xx answer');
          assert.equal(r.echo.method, 'GET');
          assert.ok(r.rejected >= 1, 'the revoked token was rejected first (the replay healed it)');
        });
        it('wget: --post-data succeeds right after a revocation', async () => {
          const r = await wget(['--post-data', BODY]);
          assert.equal(r.code, 0, 'wget exits 0 only on a 2xx answer');
          assert.deepEqual([r.echo.method, r.echo.bodyBytes], ['POST', BODY.length]);
          assert.ok(r.rejected >= 1, 'the revoked token was rejected first (the replay healed it)');
        });
      });
    }

    if (installed('python3')) {
      describe('python', () => {
        const hasRequests = runsOk('python3', ['-c', 'import requests']);
        const expectations: Expectation[] = [
          { name: 'http.client GET', bodyBytes: 0 },
          { name: 'http.client POST', bodyBytes: BODY.length },
          { name: 'http.client POST generator (chunked)', bodyBytes: BODY.length, streamed: true },
          { name: 'urllib GET', bodyBytes: 0 },
          { name: 'urllib POST', bodyBytes: BODY.length },
          { name: 'urllib POST iterable (chunked)', bodyBytes: BODY.length, streamed: true },
          ...(hasRequests ? [
            { name: 'requests GET', bodyBytes: 0 },
            { name: 'requests POST', bodyBytes: BODY.length },
            { name: 'requests POST generator (chunked)', bodyBytes: BODY.length, streamed: true },
          ] : []),
        ];
        let results = { outcomes: [] as Outcome[], rejections: [] as number[] };
        before(async () => {
          const from = bench.marks.length;
          const run = await runProcess('python3', [`${CLIENTS}real_clients.py`], { env: clientEnv({ SIDECAR: bench.url, CONTROL: bench.control }) });
          assert.equal(run.code, 0, run.stderr);
          results = { outcomes: parseLines(run.stdout).filter((o) => o.status !== undefined || o.error !== undefined), rejections: rejectionsPerCase(bench, from) };
          stacksRan.add(hasRequests ? 'python (http.client, urllib, requests)' : 'python (http.client, urllib)');
        });
        caseTests('python', expectations, () => results);
      });
    }

    if (installed('java')) {
      describe('java', () => {
        const expectations: Expectation[] = [
          { name: 'HttpURLConnection GET', bodyBytes: 0 },
          { name: 'HttpURLConnection POST fixed length', bodyBytes: BODY.length },
          { name: 'HttpURLConnection POST setChunkedStreamingMode (chunked)', bodyBytes: BODY.length, streamed: true },
          { name: 'HttpClient GET (h2c offer)', bodyBytes: 0 },
          { name: 'HttpClient POST ofByteArray (h2c offer)', bodyBytes: BODY.length },
          { name: 'HttpClient POST ofInputStream (chunked)', bodyBytes: BODY.length, streamed: true },
        ];
        let results = { outcomes: [] as Outcome[], rejections: [] as number[] };
        before(async () => {
          const from = bench.marks.length;
          // Single-file source launch (JDK 11+): compiled in memory, nothing written to the tree.
          const run = await runProcess('java', ['-Xshare:auto', '-XX:TieredStopAtLevel=1', `${CLIENTS}RealClients.java`], { env: clientEnv({ SIDECAR: bench.url, CONTROL: bench.control }), timeoutMs: 90_000 });
          assert.equal(run.code, 0, run.stderr);
          results = { outcomes: parseLines(run.stdout), rejections: rejectionsPerCase(bench, from) };
          stacksRan.add('java (HttpURLConnection, java.net.http.HttpClient)');
        });
        caseTests('java', expectations, () => results);
        it('java: HttpClient answers come back as HTTP/1.1 after its h2c offer', () => {
          const versions = results.outcomes.filter((o) => o.case.startsWith('HttpClient')).map((o) => o.version);
          assert.ok(versions.length > 0);
          assert.ok(versions.every((v) => v === 'HTTP_1_1'), String(versions));
        });
      });
    }
  });
}

it('reports which client stacks ran (absent ones are installed by .ci/run)', () => {
  const expected = ['node', ...['curl', 'wget', 'python3', 'java'].filter(installed)];
  const ran = [...stacksRan];
  process.stdout.write(`# client stacks ran: ${ran.join('; ')}\n`);
  assert.ok(ran.includes('node'), 'the Node stack always runs');
  for (const name of expected) assert.ok(ran.some((r) => r.startsWith(name === 'python3' ? 'python' : name)), `${name} is installed but did not run`);
});

/** True when `command args` runs and exits 0 (e.g. a Python module is importable). */
function runsOk(command: string, args: string[]): boolean {
  return installed(command) && spawnSync(command, args, { stdio: 'ignore', env: clientEnv() }).status === 0;
}
