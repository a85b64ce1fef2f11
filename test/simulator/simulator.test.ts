import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, test, type TestContext } from 'node:test';
import { Agent, request } from 'undici';
import { fingerprint } from '../../src/shared/secrets.js';
import { createB2bSimulator, type B2bSimulator, type B2bSimulatorOptions } from '../../src/simulator/b2b-simulator.js';
import { loadTrustedCas, trustContext } from '../../src/shared/tls.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { testTls } from '../helpers/tls.js';

const API_KEY = 'api-key-0123456789';
const PASSWORD = 'pa$$word-with-"quotes"';
const GENTOKEN = '/pub/b2b/v1/auth/gentoken';
const tls = await testTls();
const dispatcher = new Agent({ connect: { secureContext: trustContext(loadTrustedCas(tls.caFile)) } });
after(() => dispatcher.close());

async function startSim(t: TestContext, extra: Partial<B2bSimulatorOptions> = {}): Promise<B2bSimulator> {
  const sim = createB2bSimulator({ apiKey: API_KEY, password: PASSWORD, ttlSeconds: 60, tls, ...extra });
  t.after(() => sim.stop());
  await sim.start();
  return sim;
}

interface Reply { status: number; headers: Record<string, string | string[] | undefined>; text: string; json: any }
type Init = { method?: string; headers?: Record<string, string>; body?: string | Buffer };

async function call(sim: B2bSimulator, path: string, init: Init = {}): Promise<Reply> {
  const res = await request(sim.url + path, { dispatcher, method: (init.method ?? 'GET') as 'GET', headers: init.headers, body: init.body });
  const text = await res.body.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** A gentoken call; a header given as undefined is left out. */
function gentoken(sim: B2bSimulator, body: string = JSON.stringify({ password: PASSWORD }), headers: Record<string, string | undefined> = {}): Promise<Reply> {
  const all = Object.entries({ 'content-type': 'application/json', apikey: API_KEY, ...headers }).filter(([, v]) => v !== undefined);
  return call(sim, GENTOKEN, { method: 'POST', headers: Object.fromEntries(all) as Record<string, string>, body });
}

async function token(sim: B2bSimulator): Promise<string> {
  const reply = await gentoken(sim);
  assert.equal(reply.status, 200, reply.text);
  return reply.json.token;
}

const authed = (tok: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${tok}`, apikey: API_KEY, ...extra });

/** Resolves once `predicate` holds, polling on the event loop (no fixed sleeps). */
async function until(predicate: () => boolean): Promise<void> {
  while (!predicate()) await new Promise((r) => setTimeout(r, 5));
}

test('gentoken answers 200 with exactly token, refreshToken null and aliveSecondsTtl', async (t) => {
  const sim = await startSim(t, { ttlSeconds: 42 });
  const reply = await gentoken(sim);
  assert.equal(reply.status, 200);
  assert.match(String(reply.headers['content-type']), /^application\/json/);
  assert.deepEqual(Object.keys(reply.json).sort(), ['aliveSecondsTtl', 'refreshToken', 'token']);
  assert.match(reply.json.token, /^[A-Za-z0-9_-]{43}$/);
  assert.equal(reply.json.refreshToken, null);
  assert.equal(reply.json.aliveSecondsTtl, 42);
  assert.notEqual((await gentoken(sim)).json.token, reply.json.token);
  sim.faults.setTtl(3);
  assert.equal((await gentoken(sim)).json.aliveSecondsTtl, 3);
  assert.equal(sim.stats.tokensIssued, 3);
});

test('gentoken rejects every malformed or unauthorized request with 401 and a message', async (t) => {
  const sim = await startSim(t);
  const good = JSON.stringify({ password: PASSWORD });
  const cases: Array<[string, string, Record<string, string | undefined>]> = [
    ['wrong ApiKey', good, { apikey: 'nope-nope' }],
    ['missing ApiKey', good, { apikey: undefined }],
    ['empty ApiKey', good, { apikey: '' }],
    ['missing content type', good, { 'content-type': undefined }],
    ['wrong password', JSON.stringify({ password: 'wrong' }), {}],
    ['extra property', JSON.stringify({ password: PASSWORD, rkObjectId: 'x' }), {}],
    ['no password property', JSON.stringify({ pass: PASSWORD }), {}],
    ['password not a string', JSON.stringify({ password: 123 }), {}],
    ['non-JSON body', 'password=' + PASSWORD, {}],
    ['missing body', '', {}],
    ['JSON array', JSON.stringify([PASSWORD]), {}],
    ['JSON null', 'null', {}],
    ['text/plain content type', good, { 'content-type': 'text/plain' }],
  ];
  for (const [name, body, headers] of cases) {
    const reply = await gentoken(sim, body, headers);
    assert.equal(reply.status, 401, name);
    assert.deepEqual(Object.keys(reply.json), ['message'], name);
    assert.equal(typeof reply.json.message, 'string', name);
    assert.ok(!reply.text.includes(PASSWORD) && !reply.text.includes(API_KEY), `${name} echoes no secret`);
  }
  const charset = await gentoken(sim, good, { 'content-type': 'application/json; charset=utf-8' });
  assert.equal(charset.status, 200, 'a charset parameter is fine');
  const get = await call(sim, GENTOKEN, { headers: { apikey: API_KEY } });
  assert.equal(get.status, 405);
  assert.equal(typeof get.json.message, 'string');
  assert.equal(sim.stats.tokensIssued, 1);
  assert.equal(sim.stats.tokenRequests, cases.length + 2);
});

test('protected operations accept Bearer token plus ApiKey and reject anything less', async (t) => {
  const sim = await startSim(t);
  const tok = await token(sim);
  assert.equal((await call(sim, '/pub/b2b/v1/json1k', { headers: authed(tok) })).status, 200);
  const rejected: Array<[string, Record<string, string>]> = [
    ['no token', { apikey: API_KEY }],
    ['unknown token', authed('x'.repeat(43))],
    ['wrong scheme', { authorization: `Basic ${tok}`, apikey: API_KEY }],
    ['bare token', { authorization: tok, apikey: API_KEY }],
    ['no ApiKey', { authorization: `Bearer ${tok}` }],
    ['wrong ApiKey', authed(tok, { apikey: 'other-key' })],
  ];
  for (const [name, headers] of rejected) {
    const reply = await call(sim, '/pub/b2b/v1/echo', { headers });
    assert.equal(reply.status, 401, name);
    assert.equal(typeof reply.json.message, 'string', name);
  }
  assert.equal(sim.stats.unauthorizedApiRequests, rejected.length);
  assert.equal(sim.stats.apiRequests, rejected.length + 1);
});

test('a custom auth header without scheme carries the bare token', async (t) => {
  const sim = await startSim(t, { auth: { header: 'X-Auth-Token' } });
  const tok = await token(sim);
  assert.equal((await call(sim, '/pub/b2b/v1/echo', { headers: { 'x-auth-token': tok, apikey: API_KEY } })).status, 200);
  assert.equal((await call(sim, '/pub/b2b/v1/echo', { headers: authed(tok) })).status, 401);
});

test('echo reports method, raw path and query, redacted credentials and a 1 MiB body hash', async (t) => {
  const sim = await startSim(t);
  const tok = await token(sim);
  const body = Buffer.alloc(1024 * 1024 + 7, 'ab');
  const reply = await call(sim, '/pub/b2b/v1/echo/a%2Fb/c?x=1&y=%20', {
    method: 'POST', body, headers: authed(tok, { cookie: 'session=abc123', 'x-custom': 'kept' }),
  });
  assert.equal(reply.status, 200);
  assert.equal(reply.json.method, 'POST');
  assert.equal(reply.json.path, '/pub/b2b/v1/echo/a%2Fb/c');
  assert.equal(reply.json.query, 'x=1&y=%20');
  assert.equal(reply.json.bodyBytes, body.length);
  assert.equal(reply.json.bodySha256, createHash('sha256').update(body).digest('hex'));
  assert.equal(reply.json.headers.authorization, `sha256:${fingerprint(`Bearer ${tok}`)}`);
  assert.equal(reply.json.headers.apikey, `sha256:${fingerprint(API_KEY)}`);
  assert.equal(reply.json.headers.cookie, `sha256:${fingerprint('session=abc123')}`);
  assert.equal(reply.json.headers['x-custom'], 'kept');
  assert.ok(!reply.text.includes(tok) && !reply.text.includes(API_KEY));
});

test('sample operations: object, status, redirect, json1k, slow, drip and 404', async (t) => {
  const sim = await startSim(t, { rkObjectId: 'RK-42' });
  const h = authed(await token(sim));
  const obj = await call(sim, '/pub/b2b/v1/objects/RK-42', { headers: h });
  assert.equal(obj.status, 200);
  assert.equal(obj.json.rkObjectId, 'RK-42');
  assert.equal((await call(sim, '/pub/b2b/v1/objects/RK-43', { headers: h })).status, 404);
  const teapot = await call(sim, '/pub/b2b/v1/status/418', { headers: h });
  assert.equal(teapot.status, 418);
  assert.equal(typeof teapot.json.message, 'string');
  assert.equal((await call(sim, '/pub/b2b/v1/status/204', { headers: h })).status, 204);
  const redirect = await call(sim, '/pub/b2b/v1/redirect?to=https%3A%2F%2Fother.example%2Fx', { headers: h });
  assert.equal(redirect.status, 302);
  assert.equal(redirect.headers.location, 'https://other.example/x');
  const json1k = await call(sim, '/pub/b2b/v1/json1k', { headers: h });
  assert.ok(json1k.text.length > 900 && json1k.text.length < 1200, `${json1k.text.length} bytes`);
  assert.deepEqual((await call(sim, '/pub/b2b/v1/slow?ms=20', { headers: h })).json, { sleptMs: 20 });
  assert.equal((await call(sim, '/pub/b2b/v1/drip?ms=5&count=3', { headers: h })).text, 'drip 0\ndrip 1\ndrip 2\n');
  assert.equal((await call(sim, '/pub/b2b/v1/nope', { headers: h })).status, 404);
  const outside = await call(sim, '/elsewhere', { headers: h });
  assert.equal(outside.status, 404);
  assert.equal(typeof outside.json.message, 'string');
});

test('revokeAll invalidates issued tokens; later tokens work', async (t) => {
  const sim = await startSim(t);
  const old = await token(sim);
  sim.faults.revokeAll();
  const reply = await call(sim, '/pub/b2b/v1/echo', { headers: authed(old) });
  assert.equal(reply.status, 401);
  assert.match(reply.json.message, /revoked/);
  assert.equal(sim.stats.revokedTokenPresented, 1);
  assert.equal((await call(sim, '/pub/b2b/v1/echo', { headers: authed(await token(sim)) })).status, 200);
  assert.equal(sim.stats.expiredTokenPresented, 0);
});

test('expiredTokenPresented counts issued tokens used past expiry on the injected clock', async (t) => {
  const clock = new FakeClock();
  const sim = await startSim(t, { clock, ttlSeconds: 10 });
  const tok = await token(sim);
  clock.advance(9_999);
  assert.equal((await call(sim, '/pub/b2b/v1/echo', { headers: authed(tok) })).status, 200);
  clock.advance(1);
  const reply = await call(sim, '/pub/b2b/v1/echo', { headers: authed(tok) });
  assert.equal(reply.status, 401);
  assert.match(reply.json.message, /expired/);
  await call(sim, '/pub/b2b/v1/echo', { headers: authed('never-issued-token') });
  assert.equal(sim.stats.expiredTokenPresented, 1);
  assert.equal(sim.stats.unauthorizedApiRequests, 2);
});

test('injected token faults: status codes, garbage, then normal service', async (t) => {
  const sim = await startSim(t);
  for (const kind of [500, 503, 401] as const) {
    sim.faults.failNextTokenRequests(2, kind);
    for (let i = 0; i < 2; i++) {
      const reply = await gentoken(sim);
      assert.equal(reply.status, kind);
      assert.equal(typeof reply.json.message, 'string');
    }
    assert.equal((await gentoken(sim)).status, 200, `only 2 requests fail with ${kind}`);
  }
  sim.faults.failNextTokenRequests(1, 'garbage');
  const garbage = await gentoken(sim);
  assert.equal(garbage.status, 200);
  assert.equal(garbage.json.token, undefined);
  assert.equal(typeof garbage.json.aliveSecondsTtl, 'string');
  assert.equal((await gentoken(sim)).status, 200);
});

test('reset destroys the socket; hang never answers until stop', async (t) => {
  const sim = await startSim(t);
  sim.faults.failNextTokenRequests(1, 'reset');
  await assert.rejects(gentoken(sim));
  sim.faults.failNextTokenRequests(1, 'hang');
  let settled = false;
  const hanging = gentoken(sim).finally(() => { settled = true; });
  await until(() => sim.stats.tokenRequests === 2);
  // The server keeps serving while that request hangs.
  assert.equal((await gentoken(sim)).status, 200);
  assert.equal(settled, false);
  await sim.stop();
  await assert.rejects(hanging);
});

test('latency delays only its scope', async (t) => {
  const sim = await startSim(t);
  const tok = await token(sim);
  for (const [scope, slowCall, fastCall] of [
    ['token', () => gentoken(sim), () => call(sim, '/pub/b2b/v1/json1k', { headers: authed(tok) })],
    ['api', () => call(sim, '/pub/b2b/v1/json1k', { headers: authed(tok) }), () => gentoken(sim)],
  ] as const) {
    sim.faults.setLatency(60_000, scope);
    const before = sim.stats.tokenRequests + sim.stats.apiRequests;
    let settled = false;
    // Either outcome counts as settled; stop() at teardown ends the delayed request.
    void slowCall().then(() => { settled = true; }, () => { settled = true; });
    await until(() => sim.stats.tokenRequests + sim.stats.apiRequests > before);
    assert.equal((await fastCall()).status, 200, `${scope} latency leaves the other scope alone`);
    assert.equal(settled, false, `${scope} request is still delayed`);
    sim.faults.setLatency(0, 'all');
  }
  sim.faults.setLatency(10, 'all');
  assert.equal((await gentoken(sim)).status, 200, 'a small latency still answers');
});

test('clients outside the allowlist get 403; allowed ones are served', async (t) => {
  const denied = await startSim(t, { allow: ['10.0.0.0/8'] });
  const reply = await gentoken(denied);
  assert.equal(reply.status, 403);
  assert.equal(typeof reply.json.message, 'string');
  assert.equal(denied.stats.tokenRequests, 0);
  const allowed = await startSim(t, { allow: ['127.0.0.1/32', '::1/128'] });
  assert.equal((await gentoken(allowed)).status, 200);
  assert.throws(() => createB2bSimulator({ apiKey: 'a', password: 'b', ttlSeconds: 1, allow: ['127.1'] }));
});

test('a 64 MiB download streams byte i = i % 251 with Content-Length', async (t) => {
  const sim = await startSim(t);
  const total = 64 * 1024 * 1024;
  const res = await request(`${sim.url}/pub/b2b/v1/download?bytes=${total}`, { dispatcher, headers: authed(await token(sim)) });
  assert.equal(res.statusCode, 200);
  assert.equal(res.headers['content-length'], String(total));
  const pattern = Buffer.from(Array.from({ length: 251 + 2 * 1024 * 1024 }, (_, i) => i % 251));
  let offset = 0;
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    for (let at = 0; at < chunk.length; at += 2 * 1024 * 1024) {
      const part = chunk.subarray(at, at + 2 * 1024 * 1024);
      const start = (offset + at) % 251;
      assert.ok(part.equals(pattern.subarray(start, start + part.length)), `bytes at ${offset + at}`);
    }
    offset += chunk.length;
  }
  assert.equal(offset, total);
});

test('control API drives faults, latency, ttl, revocation and stats without a token', async (t) => {
  const sim = await startSim(t);
  const post = (name: string, body?: unknown) =>
    call(sim, `/_simulator/${name}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const old = await token(sim);
  assert.equal((await post('faults', { failNextTokenRequests: 1, kind: 503 })).status, 200);
  assert.equal((await gentoken(sim)).status, 503);
  assert.equal((await post('faults', { failNextTokenRequests: 1, kind: 'garbage' })).status, 200);
  assert.equal((await gentoken(sim)).json.token, undefined);
  assert.equal((await post('ttl', { seconds: 5 })).status, 200);
  assert.equal((await gentoken(sim)).json.aliveSecondsTtl, 5);
  assert.equal((await post('latency', { ms: 1, scope: 'api' })).json.latencyMs.api, 1);
  assert.equal((await post('revoke')).status, 200);
  assert.equal((await call(sim, '/pub/b2b/v1/echo', { headers: authed(old) })).status, 401);
  const stats = await call(sim, '/_simulator/stats');
  assert.equal(stats.json.tokenRequests, 4);
  assert.equal(stats.json.unauthorizedApiRequests, 1);
  assert.ok(!stats.text.includes(PASSWORD));
  for (const [name, body] of [['faults', { failNextTokenRequests: 1, kind: 'boom' }], ['latency', { ms: -1 }], ['ttl', {}]] as const) {
    const bad = await post(name, body);
    assert.equal(bad.status, 400, name);
    assert.equal(typeof bad.json.message, 'string');
  }
  assert.equal((await call(sim, '/_simulator/faults', { method: 'POST', body: '{nope' })).status, 400);
  assert.equal((await call(sim, '/_simulator/nothing')).status, 404);
  assert.equal((await post('reset')).status, 200);
  assert.equal(sim.stats.tokenRequests, 0);
  assert.deepEqual((await call(sim, '/_simulator/faults')).json.latencyMs, { token: 0, api: 0 });
});

test('stop is idempotent and closes idle keep-alive connections', async () => {
  const sim = createB2bSimulator({ apiKey: API_KEY, password: PASSWORD, ttlSeconds: 60, tls });
  await sim.stop();
  const again = createB2bSimulator({ apiKey: API_KEY, password: PASSWORD, ttlSeconds: 60 });
  const { url, port } = await again.start();
  assert.equal(url, `https://127.0.0.1:${port}`);
  assert.match(again.caPem, /BEGIN CERTIFICATE/);
  const own = new Agent({ connect: { ca: again.caPem }, keepAliveTimeout: 60_000 });
  const res = await request(`${url}${GENTOKEN}`, {
    dispatcher: own, method: 'POST', headers: { 'content-type': 'application/json', apikey: API_KEY }, body: JSON.stringify({ password: PASSWORD }),
  });
  assert.equal(res.statusCode, 200);
  await res.body.text();
  await Promise.all([again.stop(), again.stop()]);
  await again.stop();
  await own.close();
  await assert.rejects(again.start());
});

test('POST /_simulator/password rotates the password: the new and the previous one are accepted, older ones not', async (t) => {
  const sim = await startSim(t);
  const rotate = (password: unknown) => call(sim, '/_simulator/password', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ password }) });
  assert.equal((await rotate('second-password')).status, 200);
  assert.equal((await gentoken(sim, JSON.stringify({ password: 'second-password' }))).status, 200);
  assert.equal((await gentoken(sim)).status, 200, 'the previous password stays valid during the rotation');
  assert.equal((await rotate('third-password')).status, 200);
  assert.equal((await gentoken(sim)).status, 401, 'two rotations back is refused');
  assert.equal((await gentoken(sim, JSON.stringify({ password: 'second-password' }))).status, 200);
  const bad = await rotate('');
  assert.equal(bad.status, 400);
  assert.match(bad.json.message, /password must be a non-empty string/);
});
