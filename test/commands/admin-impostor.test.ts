import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';
import { startSidecar, startSimulator } from '../helpers/stack.js';

/**
 * What `status`, `wait` and `healthcheck` (the built CLI) print when something other than the
 * sidecar answers on the admin port (docs/security.md, "Admin clients print only what is safe"),
 * and `healthcheck` under idle admin connections from its own address.
 */

/** Terminal control: clear screen, a window title with BEL, 8-bit CSI, a bidi override, a forged line. */
const EVIL = '\u001b[2J\u001b]0;owned\u0007\u009b31m\u202eline\nready: forged';
/** Any raw control character, DEL, C1 or bidi override on the output. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

async function impostor(answer: (path: string) => { status: number; body: unknown }): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const { status, body } = answer(req.url ?? '/');
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); }),
  };
}

/** Nothing printed holds a raw control character; every line the CLI printed is its own (no forged one). */
function assertPrintable(out: string): void {
  const withoutNewlines = out.replace(/\n/g, '');
  assert.doesNotMatch(withoutNewlines, RAW_CONTROL, JSON.stringify(out));
  assert.doesNotMatch(out, /^ready: forged/m);
}

describe('admin clients against an impostor admin port', () => {
  it('status: an answer with no build information is not the sidecar\'s: exit 3, escaped, never "ready"', async (t) => {
    const fake = await impostor(() => ({ status: 200, body: { state: `ready${EVIL}`, ready: true, warnings: [EVIL], listeners: {}, message: EVIL } }));
    t.after(() => fake.close());
    for (const json of [false, true]) {
      const run = await runCli(['status', '--admin', fake.url, ...(json ? ['--json'] : [])]);
      assert.equal(run.code, 3, run.stderr);
      assert.match(run.stderr, /^unreachable: http:\/\/127\.0\.0\.1:\d+\/status answered something that is not the b2b-sidecar admin listener's \/status: no status with build information/m);
      assert.doesNotMatch(run.stdout, /"ready": ?true/);
      assertPrintable(run.stdout + run.stderr);
    }
  });

  it('status: a refusal\'s message is printed escaped (exit 3)', async (t) => {
    const fake = await impostor(() => ({ status: 503, body: { message: EVIL } }));
    t.after(() => fake.close());
    const run = await runCli(['status', '--admin', fake.url]);
    assert.equal(run.code, 3);
    assert.ok(run.stderr.includes('\\x1b[2J\\x1b]0;owned\\x07\\x9b31m\\u202eline\\x0aready: forged'), run.stderr);
    assertPrintable(run.stderr);
  });

  it('status: a status-shaped answer is printed with every string escaped', async (t) => {
    const fake = await impostor(() => ({
      status: 200,
      body: { state: `ready${EVIL}`, ready: true, live: true, at: EVIL, warnings: [EVIL], token: undefined, listeners: { proxy: EVIL }, build: { version: EVIL, node: EVIL } },
    }));
    t.after(() => fake.close());
    for (const json of [false, true]) {
      const run = await runCli(['status', '--admin', fake.url, ...(json ? ['--json'] : [])]);
      assert.equal(run.code, 0, run.stderr);
      assert.match(run.stdout, /\\x1b\[2J/);
      assertPrintable(run.stdout + run.stderr);
    }
  });

  it('healthcheck and wait: a 200 that is not the sidecar\'s is not a verdict (exit 1, said so, escaped)', async (t) => {
    const fake = await impostor(() => ({ status: 200, body: { status: EVIL } }));
    t.after(() => fake.close());
    const health = await runCli(['healthcheck', '--admin', fake.url]);
    assert.equal(health.code, 1, health.stdout);
    assert.equal(health.stdout, '');
    assert.match(health.stderr, /^unhealthy: http:\/\/127\.0\.0\.1:\d+\/healthz answered something that is not the b2b-sidecar admin listener's \/healthz/m);
    const wait = await runCli(['wait', '--timeout', '1s', '--admin', fake.url]);
    assert.equal(wait.code, 1, wait.stdout);
    assert.equal(wait.stdout, '');
    assert.match(wait.stderr, /last answered something that is not the b2b-sidecar admin listener's \/readyz/);
    assertPrintable(health.stderr + wait.stderr);
  });
});

describe('healthcheck under idle admin connections from its own address', () => {
  it('64 reconnecting idle connections from 127.0.0.1 do not fail healthcheck (10 of 10)', async (t) => {
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    t.after(() => s.stop());
    let stopped = false;
    const open = new Set<Socket>();
    // Each holds a connection idle; when the listener closes it (408 after 2 s, or to make room),
    // it connects again at once.
    const hold = (): void => {
      if (stopped) return;
      const c = connect(s.adminPort, '127.0.0.1');
      open.add(c);
      c.on('error', () => undefined);
      c.once('close', () => {
        open.delete(c);
        setImmediate(hold);
      });
    };
    for (let i = 0; i < 64; i++) hold();
    t.after(() => {
      stopped = true;
      for (const c of open) c.destroy();
    });
    await new Promise((r) => setTimeout(r, 300));
    const verdicts: string[] = [];
    for (let i = 0; i < 10; i++) {
      const run = await runCli(['healthcheck', '--admin', `http://127.0.0.1:${s.adminPort}`]);
      verdicts.push(run.code === 0 ? 'healthy' : `exit ${run.code}: ${run.stderr.trim()}`);
    }
    assert.deepEqual(verdicts, Array(10).fill('healthy'));
  });
});
