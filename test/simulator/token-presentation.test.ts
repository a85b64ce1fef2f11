import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { simulateCommand } from '../../src/commands/simulate.js';
import { fingerprint } from '../../src/shared/secrets.js';
import { createB2bSimulator, parseTokenIn } from '../../src/simulator/b2b-simulator.js';
import { loadTrustedCas, trustContext } from '../../src/shared/tls.js';
import { captureIo } from '../helpers/command-io.js';
import { testTls } from '../helpers/tls.js';

describe('simulate --token-in', () => {
  it('parses header:NAME[:SCHEME] and query:NAME, with an optional +apikey', () => {
    assert.deepEqual(parseTokenIn('header:Authorization:Bearer'), { in: 'header', name: 'authorization', scheme: 'Bearer', requireApiKey: false });
    assert.deepEqual(parseTokenIn('header:Authorization'), { in: 'header', name: 'authorization', scheme: undefined, requireApiKey: false });
    assert.deepEqual(parseTokenIn('header:X-Auth-Token+apikey'), { in: 'header', name: 'x-auth-token', scheme: undefined, requireApiKey: true });
    assert.deepEqual(parseTokenIn('query:token+apikey'), { in: 'query', name: 'token', scheme: undefined, requireApiKey: true });
    for (const bad of ['', 'token', 'cookie:token', 'header:', 'header:Auth Token', 'header:A:B:C', 'query:a:b', 'query:a=b', 'header:Authorization+apikey+apikey']) {
      assert.throws(() => parseTokenIn(bad), /--token-in .* is not header:NAME\[:SCHEME\]\[\+apikey\] or query:NAME\[\+apikey\]/, bad);
    }
  });

  it('a simulator set to query:token accepts the token only there, and its echo shows it as a fingerprint', async (t) => {
    const tls = await testTls();
    const sim = createB2bSimulator({ apiKey: 'sim-key-1234', password: 'sim-password-1234', ttlSeconds: 60, tls, tokenIn: parseTokenIn('query:token') });
    t.after(() => sim.stop());
    await sim.start();
    const dispatcher = new Agent({ connect: { secureContext: trustContext(loadTrustedCas(tls.caFile)) } });
    t.after(() => dispatcher.close());
    const gentoken = await request(`${sim.url}/pub/b2b/v1/auth/gentoken`, {
      dispatcher, method: 'POST', headers: { 'content-type': 'application/json', apikey: 'sim-key-1234' }, body: JSON.stringify({ password: 'sim-password-1234' }),
    });
    const { token } = (await gentoken.body.json()) as { token: string };
    const call = async (path: string, headers: Record<string, string> = {}) => {
      const res = await request(`${sim.url}${path}`, { dispatcher, headers });
      return { status: res.statusCode, body: (await res.body.json()) as Record<string, unknown> };
    };
    const ok = await call(`/pub/b2b/v1/echo?a=1&token=${encodeURIComponent(token)}`);
    assert.equal(ok.status, 200, 'no ApiKey needed without +apikey');
    assert.equal(ok.body.query, `a=1&token=sha256:${fingerprint(token)}`);
    const header = await call('/pub/b2b/v1/echo', { authorization: `Bearer ${token}`, apikey: 'sim-key-1234' });
    assert.equal(header.status, 401);
    assert.equal(header.body.message, 'missing token: expected in query parameter token=<token>');
    assert.equal((await call(`/pub/b2b/v1/echo?token=${token}&token=${token}`)).status, 401, 'two values are ambiguous');
  });

  it('simulate exits 2 naming --token-in for a bad value, and prints a curl line for the chosen presentation', async (t) => {
    const bad = captureIo({});
    assert.equal(await simulateCommand({ port: 0, tokenIn: 'cookie:token' }, bad.io), 2);
    assert.match(bad.stderr(), /--token-in "cookie:token" is not/);

    const handlers: Array<() => void> = [];
    const good = captureIo({});
    good.io.onSignal = (_signal, handler) => handlers.push(handler);
    const running = simulateCommand({ port: 0, tokenIn: 'header:AuthToken+apikey' }, good.io);
    t.after(async () => { handlers.forEach((h) => h()); await running; });
    while (!good.stdout().includes('Press Ctrl-C') && good.stderr() === '') await new Promise((r) => setTimeout(r, 5));
    assert.match(good.stdout(), /\/pub\/b2b\/v1\/echo -H 'authtoken: <token>' -H 'ApiKey: demo-api-key'/);
  });
});
