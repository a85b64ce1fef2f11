import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createB2bSimulator, type B2bSimulator } from '../../src/simulator/b2b-simulator.js';
import { testTls } from '../helpers/tls.js';

/**
 * The simulator's two vendor shapes the benchmarks of several credential sets and of a fleet need:
 * several keys, each token valid only with its own key; and one live token per key (a new
 * gentoken revokes the earlier tokens of that key, as WeChat's access_token does).
 */
const tls = await testTls();
const ca = tls.caPem;

async function gentoken(sim: B2bSimulator, apiKey: string, password: string): Promise<{ status: number; token?: string }> {
  const res = await fetchWithCa(`${sim.url}/pub/b2b/v1/auth/gentoken`, { method: 'POST', headers: { ApiKey: apiKey, 'Content-Type': 'application/json' }, body: JSON.stringify({ password }) });
  const body = await res.json() as { token?: string };
  return { status: res.status, ...(body.token ? { token: body.token } : {}) };
}

async function call(sim: B2bSimulator, apiKey: string, token: string): Promise<number> {
  const res = await fetchWithCa(`${sim.url}/pub/b2b/v1/json1k`, { headers: { ApiKey: apiKey, Authorization: `Bearer ${token}` } });
  await res.arrayBuffer();
  return res.status;
}

const { Agent } = await import('undici');
const dispatcher = new Agent({ connect: { ca } });
function fetchWithCa(url: string, init: RequestInit): Promise<Response> {
  return fetch(url, { ...init, dispatcher } as RequestInit);
}

describe('simulator: several keys, one live token per key', () => {
  let sim: B2bSimulator;
  before(async () => {
    sim = createB2bSimulator({
      apiKey: 'key-a', password: 'pw-a', ttlSeconds: 60, tls,
      otherKeys: [{ apiKey: 'key-b', password: 'pw-b' }], oneLiveTokenPerKey: true,
    });
    await sim.start();
  });
  after(async () => {
    await sim.stop();
    await dispatcher.close();
  });

  it('issues tokens to every known key, with its own password only', async () => {
    assert.equal((await gentoken(sim, 'key-b', 'pw-b')).status, 200);
    assert.equal((await gentoken(sim, 'key-b', 'pw-a')).status, 401);
    assert.equal((await gentoken(sim, 'key-c', 'pw-b')).status, 401);
  });

  it('accepts a token only with the key it was issued to', async () => {
    const a = (await gentoken(sim, 'key-a', 'pw-a')).token!;
    const b = (await gentoken(sim, 'key-b', 'pw-b')).token!;
    assert.equal(await call(sim, 'key-a', a), 200);
    assert.equal(await call(sim, 'key-b', b), 200);
    assert.equal(await call(sim, 'key-a', b), 401, "b's token with a's key");
    assert.equal(await call(sim, 'key-b', a), 401, "a's token with b's key");
  });

  it("revokes a key's earlier token when it issues a new one, and only that key's", async () => {
    const first = (await gentoken(sim, 'key-a', 'pw-a')).token!;
    const other = (await gentoken(sim, 'key-b', 'pw-b')).token!;
    const second = (await gentoken(sim, 'key-a', 'pw-a')).token!;
    assert.equal(await call(sim, 'key-a', first), 401);
    assert.equal(await call(sim, 'key-a', second), 200);
    assert.equal(await call(sim, 'key-b', other), 200);
  });

  it('records when each gentoken request came', () => {
    assert.ok(sim.tokenRequestTimes.length >= 7);
    assert.ok(sim.tokenRequestTimes.every((t, i, all) => i === 0 || t >= all[i - 1]!));
  });
});
