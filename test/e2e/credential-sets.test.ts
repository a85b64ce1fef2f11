import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type OutgoingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/validate-config.js';
import { createSidecar, type Sidecar } from '../../src/sidecar.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { rawExchange, statuses } from '../helpers/raw-client.js';
import { startSetVendor, type SetVendor } from '../helpers/set-vendor.js';
import { testTls } from '../helpers/tls.js';

/**
 * Several credential sets in one sidecar (docs/credential-sets.md) against a vendor that knows
 * three keys, each token valid only with its own key: selection by listener, by path prefix and by
 * the B2B-Credential header; each set's requests carry only its own token through renewals, a
 * revocation with its replay and a rotation of one set's password file; one set refused costs the
 * others nothing.
 */
const KEYS = { 'key-a-0123456789': 'password-a-0123456789', 'key-b-0123456789': 'password-b-0123456789', 'key-c-0123456789': 'password-c-0123456789' };
const KEY = { a: 'key-a-0123456789', b: 'key-b-0123456789', c: 'key-c-0123456789' } as const;

const dir = mkdtempSync(join(tmpdir(), 'b2b-sets-'));
after(() => rmSync(dir, { recursive: true, force: true }));

interface Answer { status: number; headers: Record<string, string | string[] | undefined>; body: string }

/** One request to the sidecar. */
function send(port: number, path: string, headers: OutgoingHttpHeaders = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Waits (real time: the token requests are real HTTP) until `cond` holds; bounded (~20 s) so a regression fails rather than hangs. */
async function until(cond: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2000; i++) {
    if (cond()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.fail(`timed out waiting for ${what}`);
}

interface Running { sidecar: Sidecar; port: number; adminPort: number; setPort: number; clock: FakeClock; tokenFile: string; passwordFileB: string; log: ReturnType<typeof createCaptureLogger> }

async function startSets(vendor: SetVendor, extra: Record<string, unknown> = {}): Promise<Running> {
  const sub = mkdtempSync(join(dir, 'run-'));
  const passwordFileB = join(sub, 'password-b');
  writeFileSync(passwordFileB, `${KEYS[KEY.b]}\n`);
  const tokenFile = join(sub, 'token');
  const config = validateConfig({
    listen: { host: '127.0.0.1', port: 0 },
    admin: { host: '127.0.0.1', port: 0 },
    service: { baseUrl: vendor.url, caFile: (await testTls()).caFile },
    // 127.0.0.1 is the proxy in front of "10.1.9.9", a source the header set does not allow.
    guard: { allow: ['127.0.0.1/32', '10.1.0.0/16'], trustedProxies: ['127.0.0.1/32'] },
    token: { maxLifetimeSeconds: 60, file: tokenFile },
    credentials: [
      { id: 'a', apiKey: KEY.a, password: KEYS[KEY.a], listen: { host: '127.0.0.1', port: 0 } },
      { id: 'b', apiKey: KEY.b, passwordFile: passwordFileB, pathPrefix: '/objects-b/' },
      { id: 'c', apiKey: KEY.c, password: KEYS[KEY.c], headerAllow: ['127.0.0.1/32'] },
    ],
    ...extra,
  });
  const clock = new FakeClock();
  const log = createCaptureLogger();
  const sidecar = createSidecar(config, { logger: log.logger, secrets: log.secrets, clock, env: {} });
  const { port, adminPort } = await sidecar.start();
  const setPort = Number(sidecar.status().listeners.sets!.a!.split(':').at(-1));
  return { sidecar, port, adminPort, setPort, clock, tokenFile, passwordFileB, log };
}

const current = (s: Running, id: string) => s.sidecar.status().credentials.find((c) => c.id === id)!.token;

/** Every protected request the vendor saw carried a token issued for the ApiKey it carried. */
function assertOwnTokens(vendor: SetVendor): void {
  for (const r of vendor.seen) {
    if (r.token === undefined) continue;
    assert.equal(r.tokenKey, r.apiKey, `a request with ApiKey ${r.apiKey} carried a token of ${r.tokenKey} (${r.url})`);
  }
}

describe('credential sets: three sets against a vendor that knows three keys', { timeout: 60_000 }, () => {
  let vendor: SetVendor;
  let s: Running;
  before(async () => {
    vendor = await startSetVendor(KEYS);
    s = await startSets(vendor);
    await until(() => s.sidecar.health().ready, 'every set ready');
  });
  after(async () => {
    await s?.sidecar.stop();
    await vendor?.close();
  });

  it('chooses by listener: every request on a set\'s own listener uses that set', async () => {
    const answer = await send(s.setPort, '/pub/b2b/v1/whoami');
    assert.equal(answer.status, 200, answer.body);
    assert.equal(JSON.parse(answer.body).apiKey, KEY.a);
    // The header may only name the listener's own set; it is removed either way.
    assert.equal((await send(s.setPort, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'a' })).status, 200);
    const other = await send(s.setPort, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'c' });
    assert.equal(other.status, 400);
    assert.match(JSON.parse(other.body).message, /serves the credential set a/);
    assert.ok(vendor.seen.every((r) => r.headers['b2b-credential'] === undefined));
  });

  it('chooses by path prefix on the shared listener: prefix stripped before forwarding, Location rewritten back', async () => {
    const before = vendor.seen.length;
    const answer = await send(s.port, '/objects-b/pub/b2b/v1/whoami?x=1');
    assert.equal(answer.status, 200, answer.body);
    const seen = vendor.seen.slice(before);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.url, '/pub/b2b/v1/whoami?x=1');
    assert.equal(seen[0]!.apiKey, KEY.b);
    const moved = await send(s.port, '/objects-b/pub/b2b/v1/redirect');
    assert.equal(moved.status, 302);
    assert.equal(moved.headers.location, '/objects-b/pub/b2b/v1/whoami');
    // The header agreeing with the prefix is fine; naming another set is not.
    assert.equal((await send(s.port, '/objects-b/pub/b2b/v1/whoami', { 'B2B-Credential': 'b' })).status, 200);
    const conflict = await send(s.port, '/objects-b/pub/b2b/v1/whoami', { 'B2B-Credential': 'c' });
    assert.equal(conflict.status, 400);
    assert.match(JSON.parse(conflict.body).message, /path prefix serves the credential set b/);
  });

  it('chooses by B2B-Credential from a source in headerAllow; removes it; 403 from another source; 400 for two, unknown, none', async () => {
    const before = vendor.seen.length;
    const answer = await send(s.port, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'c' });
    assert.equal(answer.status, 200, answer.body);
    const seen = vendor.seen.slice(before);
    assert.equal(seen.length, 1);
    assert.equal(seen[0]!.apiKey, KEY.c);
    assert.equal(seen[0]!.headers['b2b-credential'], undefined, 'B2B-Credential never leaves the sidecar');

    const refused = await send(s.port, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'c', 'X-Forwarded-For': '10.1.9.9' });
    assert.equal(refused.status, 403);
    assert.match(JSON.parse(refused.body).message, /may not choose the credential set c/);
    // Only its own listener or prefix reaches a: the header cannot choose a set without headerAllow.
    assert.equal((await send(s.port, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'a' })).status, 403);

    const two = await rawExchange(s.port, 'GET /pub/b2b/v1/whoami HTTP/1.1\r\nHost: sidecar\r\nB2B-Credential: c\r\nB2B-Credential: c\r\nConnection: close\r\n\r\n');
    assert.deepEqual(statuses(two.text), [400]);
    assert.match(two.text, /at most one B2B-Credential header/);
    const unknown = await send(s.port, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'zz' });
    assert.equal(unknown.status, 400);
    assert.match(JSON.parse(unknown.body).message, /names no credential set: "zz"/);
    const none = await send(s.port, '/pub/b2b/v1/whoami');
    assert.equal(none.status, 400);
    assert.match(JSON.parse(none.body).message, /no credential set chosen: use a set's own listener, its pathPrefix, or the B2B-Credential header/);
    assert.equal(vendor.seen.length, before + 1, 'refused requests never reach the vendor');
  });

  it('each set\'s requests carry only its own token through renewals, a revocation with replay and a rotation of one set\'s password file', async () => {
    const traffic = async () => {
      for (const [port, path, headers] of [[s.setPort, '/pub/b2b/v1/whoami', {}], [s.port, '/objects-b/pub/b2b/v1/whoami', {}], [s.port, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'c' }]] as const) {
        const answer = await send(port, path, headers);
        assert.equal(answer.status, 200, `${path}: ${answer.body}`);
      }
    };
    await traffic();
    // Renewals: each set renews on its own schedule (jittered per set), twice.
    for (let round = 0; round < 2; round++) {
      const generations = ['a', 'b', 'c'].map((id) => current(s, id)!.generation!);
      await s.clock.advanceAsync(55_000);
      await until(() => ['a', 'b', 'c'].every((id, i) => current(s, id)!.generation! > generations[i]! && current(s, id)!.ready), `renewal round ${round}`);
      await traffic();
    }
    // A revocation of b's token: its 401 renews b alone and replays with b's new token.
    const heldA = current(s, 'a')!.fingerprint;
    const heldC = current(s, 'c')!.fingerprint;
    vendor.revoke(vendor.issued.get(KEY.b)!.at(-1)!);
    const callsA = vendor.gentokenCalls.get(KEY.a);
    const replayed = await send(s.port, '/objects-b/pub/b2b/v1/whoami');
    assert.equal(replayed.status, 200, replayed.body);
    assert.equal(current(s, 'a')!.fingerprint, heldA);
    assert.equal(current(s, 'c')!.fingerprint, heldC);
    assert.equal(vendor.gentokenCalls.get(KEY.a), callsA, 'b\'s renewal made no gentoken call for a');
    // A rotation of b's password file (SIGHUP): b obtains a token with it; a and c keep theirs.
    vendor.setPassword(KEY.b, 'password-b-rotated-0001');
    writeFileSync(s.passwordFileB, 'password-b-rotated-0001\n');
    const tokensB = vendor.issued.get(KEY.b)!.length;
    await s.sidecar.reloadCredentials(true);
    assert.equal(vendor.issued.get(KEY.b)!.length, tokensB + 1);
    const said = s.log.lines().filter((l) => l.message === 'SIGHUP: re-read the files').at(-1) as Record<string, unknown> | undefined;
    assert.deepEqual(said?.credentials, { unchanged: ['a', 'c'], changed: ['b'] });
    assert.deepEqual(said?.files, ['credentials[1].passwordFile']);
    assert.equal(current(s, 'a')!.fingerprint, heldA);
    assert.equal(current(s, 'c')!.fingerprint, heldC);
    await traffic();
    assertOwnTokens(vendor);
    assert.ok(vendor.seen.every((r) => r.headers['b2b-credential'] === undefined));
    // token.file: one file per set, named <file>.<id>, each with its own set's current token.
    for (const [id, key] of Object.entries(KEY)) {
      await until(() => { try { return readFileSync(`${s.tokenFile}.${id}`, 'utf8') === vendor.issued.get(key)!.at(-1); } catch { return false; } }, `token file of ${id}`);
    }
  });

  it('a change of one set\'s password file seen by the watch rotates that set alone (docs/traps.md T77)', async () => {
    const heldA = current(s, 'a')!.fingerprint;
    const heldC = current(s, 'c')!.fingerprint;
    const calls = { a: vendor.gentokenCalls.get(KEY.a), c: vendor.gentokenCalls.get(KEY.c) };
    const tokensB = vendor.issued.get(KEY.b)!.length;
    vendor.setPassword(KEY.b, 'password-b-rotated-0002');
    writeFileSync(s.passwordFileB, 'password-b-rotated-0002\n');
    // The watch settles for 200 ms of real time (file systems swap secrets in steps), then re-reads.
    await until(() => vendor.issued.get(KEY.b)!.length === tokensB + 1 && current(s, 'b')!.ready, 'b rotated by the file watch');
    assert.equal(current(s, 'a')!.fingerprint, heldA);
    assert.equal(current(s, 'c')!.fingerprint, heldC);
    assert.deepEqual({ a: vendor.gentokenCalls.get(KEY.a), c: vendor.gentokenCalls.get(KEY.c) }, calls);
    assert.equal((await send(s.port, '/objects-b/pub/b2b/v1/whoami')).status, 200);
    assertOwnTokens(vendor);
  });

  it('lists every set in /status and labels the per-token metrics with the set\'s id', async () => {
    const status = s.sidecar.status();
    assert.deepEqual(status.credentials.map((c) => [c.id, c.token?.ready]), [['a', true], ['b', true], ['c', true]]);
    const metrics = await s.sidecar.registry.metrics();
    for (const id of ['a', 'b', 'c']) {
      assert.match(metrics, new RegExp(`^b2b_sidecar_token_valid\\{credential="${id}"\\} 1$`, 'm'));
      assert.match(metrics, new RegExp(`^b2b_sidecar_token_refresh_total\\{result="success",credential="${id}"\\} [1-9]`, 'm'));
    }
    assert.doesNotMatch(metrics, /credential="default"/);
  });
});

describe('credential sets: a set\'s own listener that cannot bind', () => {
  it('names the set\'s key, and start-up fails as for listen', async (t) => {
    const vendor = await startSetVendor(KEYS);
    t.after(() => vendor.close());
    const blocker = createServer().listen(0, '127.0.0.1');
    t.after(() => blocker.close());
    await new Promise((resolve) => blocker.once('listening', resolve));
    const taken = (blocker.address() as AddressInfo).port;
    const config = validateConfig({
      listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 },
      service: { baseUrl: vendor.url, caFile: (await testTls()).caFile },
      credentials: [{ id: 'a', apiKey: KEY.a, password: KEYS[KEY.a] }, { id: 'b', apiKey: KEY.b, password: KEYS[KEY.b], listen: { host: '127.0.0.1', port: taken } }],
    });
    const log = createCaptureLogger();
    const sidecar = createSidecar(config, { logger: log.logger, secrets: log.secrets, clock: new FakeClock(), env: {} });
    await assert.rejects(sidecar.start(), (err: Error) => {
      assert.match(err.message, new RegExp(`^credentials\\[1\\]\\.listen: the listener of credential set b cannot listen on 127\\.0\\.0\\.1:${taken}: the port is already in use`));
      return true;
    });
    await sidecar.stop();
  });
});

describe('credential sets: one set whose key is refused', { timeout: 60_000 }, () => {
  it('costs the others nothing: they serve and stay ready; default readiness is not ready; ?credential= tells which', async (t) => {
    const vendor = await startSetVendor(KEYS);
    t.after(() => vendor.close());
    vendor.refuse(KEY.c);
    const s = await startSets(vendor);
    t.after(() => s.sidecar.stop());
    await until(() => current(s, 'a')?.ready === true && current(s, 'b')?.ready === true && current(s, 'c')?.lastRefreshError !== undefined, 'a and b ready, c refused');
    assert.equal((await send(s.setPort, '/pub/b2b/v1/whoami')).status, 200);
    assert.equal((await send(s.port, '/objects-b/pub/b2b/v1/whoami')).status, 200);
    const refusedSet = await send(s.port, '/pub/b2b/v1/whoami', { 'B2B-Credential': 'c' });
    assert.equal(refusedSet.status, 503, 'c has no token: its requests get 503, never another set\'s token');
    const readyz = await send(s.adminPort, '/readyz');
    assert.equal(readyz.status, 503);
    assert.match(JSON.parse(readyz.body).message, /^credential set c: /);
    assert.equal((await send(s.adminPort, '/readyz?credential=a')).status, 200);
    assert.equal((await send(s.adminPort, '/readyz?credential=b')).status, 200);
    assert.equal((await send(s.adminPort, '/readyz?credential=c')).status, 503);
    assert.equal((await send(s.adminPort, '/readyz?credential=d')).status, 404);
    // The refused key's retries are its own: c tries again and again, a and b keep their own
    // schedule (the first token and, with the first renewal spread over the renewal delay of a
    // 60 s token among several sets, docs/traps.md T93, at most one renewal in 30 s).
    const refusedBefore = vendor.gentokenCalls.get(KEY.c) ?? 0;
    await s.clock.advanceAsync(30_000);
    assert.ok((vendor.gentokenCalls.get(KEY.c) ?? 0) > refusedBefore, 'c tried again');
    assert.ok((vendor.gentokenCalls.get(KEY.a) ?? 0) <= 2, `a: ${vendor.gentokenCalls.get(KEY.a)} calls`);
    assert.ok((vendor.gentokenCalls.get(KEY.b) ?? 0) <= 2, `b: ${vendor.gentokenCalls.get(KEY.b)} calls`);
    assertOwnTokens(vendor);
    const metrics = await s.sidecar.registry.metrics();
    assert.match(metrics, /^b2b_sidecar_token_valid\{credential="c"\} 0$/m);
    assert.match(metrics, /^b2b_sidecar_token_request_failures_total\{cause="unauthorized",credential="c"\} [1-9]/m);
    assert.match(metrics, /^b2b_sidecar_token_request_failures_total\{cause="unauthorized",credential="a"\} 0$/m);
  });

  it('with readiness.credentials any, ready while one set holds a token, the others named in warnings', async (t) => {
    const vendor = await startSetVendor(KEYS);
    t.after(() => vendor.close());
    vendor.refuse(KEY.c);
    const s = await startSets(vendor, { readiness: { credentials: 'any' } });
    t.after(() => s.sidecar.stop());
    await until(() => current(s, 'a')?.ready === true && current(s, 'c')?.lastRefreshError !== undefined, 'a ready, c refused');
    const readyz = await send(s.adminPort, '/readyz');
    assert.equal(readyz.status, 200);
    assert.ok((JSON.parse(readyz.body).warnings as string[]).some((w) => w.startsWith('credential set c: no valid token')));
  });
});
