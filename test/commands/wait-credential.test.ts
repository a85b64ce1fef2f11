import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { waitCommand } from '../../src/commands/wait.js';
import { captureIo } from '../helpers/command-io.js';

/**
 * A stand-in admin listener answering `/readyz?credential=<id>` as the sidecar's does: 200
 * `{"status":"ready"}` for a set holding a token, 503 `{"status":"not ready","message":…}` for one
 * without, 404 `{"message":…}` for an id no set has; plain `/readyz` for every set together.
 */
async function startAdmin(ready: Map<string, boolean>): Promise<{ url: string; asked: string[]; close(): Promise<void> }> {
  const asked: string[] = [];
  const server: Server = createServer((req, res) => {
    asked.push(req.url ?? '');
    const url = new URL(req.url ?? '/', 'http://admin');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname !== '/readyz') return send(404, { message: 'not found' });
    const id = url.searchParams.get('credential');
    if (id === null) return [...ready.values()].every(Boolean) ? send(200, { status: 'ready' }) : send(503, { status: 'not ready', message: 'credential set "b": no token yet' });
    if (!ready.has(id)) return send(404, { message: `no credential set has the id "${id}" (the ids are the credentials[].id of the config)` });
    return ready.get(id) ? send(200, { status: 'ready' }) : send(503, { status: 'not ready', message: 'no token yet' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('wait --credential', () => {
  it('exits 0 once the named set is ready, while another set is not (the sidecar as a whole is not ready)', async (t) => {
    const admin = await startAdmin(new Map([['a', true], ['b', false]]));
    t.after(() => admin.close());
    const run = captureIo({});
    assert.equal(await waitCommand({ admin: admin.url, credential: 'a', timeout: '5s', intervalMs: 20 }, run.io), 0, run.stderr());
    assert.match(run.stdout(), /^ready: http:\/\/127\.0\.0\.1:\d+\/readyz\?credential=a answered 200$/m);
    assert.deepEqual(admin.asked, ['/readyz?credential=a']);
    // Without the option: every set, and b has no token.
    const all = captureIo({});
    assert.equal(await waitCommand({ admin: admin.url, timeout: '200ms', intervalMs: 20 }, all.io), 1);
    assert.match(all.stderr(), /\/readyz last answered 503 "credential set "b": no token yet"$/m);
  });

  it('waits while the named set is not ready and exits 0 when it becomes ready', async (t) => {
    const ready = new Map([['a', true], ['b', false]]);
    const admin = await startAdmin(ready);
    t.after(() => admin.close());
    const run = captureIo({});
    const waiting = waitCommand({ admin: admin.url, credential: 'b', timeout: '10s', intervalMs: 20 }, run.io);
    while (admin.asked.length < 3) await new Promise((r) => setTimeout(r, 10));
    ready.set('b', true);
    assert.equal(await waiting, 0, run.stderr());
    assert.ok(admin.asked.every((u) => u === '/readyz?credential=b'));
  });

  it('exits 1 with the set\'s own readiness message when it stays not ready', async (t) => {
    const admin = await startAdmin(new Map([['a', true], ['b', false]]));
    t.after(() => admin.close());
    const run = captureIo({});
    assert.equal(await waitCommand({ admin: admin.url, credential: 'b', timeout: '200ms', intervalMs: 20 }, run.io), 1);
    assert.match(run.stderr(), /^not ready after 0\.2 s: http:\/\/127\.0\.0\.1:\d+\/readyz\?credential=b last answered 503 "no token yet"$/m);
  });

  it('exits 2 at once for an id the sidecar does not have (its 404), with the sidecar\'s message', async (t) => {
    const admin = await startAdmin(new Map([['a', true]]));
    t.after(() => admin.close());
    const run = captureIo({});
    const started = Date.now();
    assert.equal(await waitCommand({ admin: admin.url, credential: 'zz', timeout: '30s', intervalMs: 20 }, run.io), 2);
    assert.ok(Date.now() - started < 10_000, 'did not wait for the timeout');
    assert.equal(admin.asked.length, 1);
    assert.match(run.stderr(), /^wait: no credential set "zz" at http:\/\/127\.0\.0\.1:\d+\/: no credential set has the id "zz"/m);
  });

  it('sends an id with characters a URL must escape as one query parameter', async (t) => {
    const admin = await startAdmin(new Map([['a', true]]));
    t.after(() => admin.close());
    const run = captureIo({});
    assert.equal(await waitCommand({ admin: admin.url, credential: 'a&credential=b', timeout: '1s', intervalMs: 20 }, run.io), 2);
    assert.deepEqual(admin.asked, ['/readyz?credential=a%26credential%3Db']);
  });
});
