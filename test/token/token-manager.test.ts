import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { MAX_TIMER_MS } from '../../src/shared/clock.js';
import { compileAttachments } from '../../src/proxy/attach.js';
import { DEFAULT_ATTACH } from '../../src/config/schema.js';
import { tokenCredentials, type RouteCredentials } from '../../src/proxy/route-credentials.js';
import { TokenUnavailableError } from '../../src/shared/errors.js';
import { SecretSet } from '../../src/shared/secrets.js';
import { createTokenClient, type Credentials } from '../../src/token/token-client.js';
import { TokenManager, type RefreshResult, type TokenSnapshot } from '../../src/token/token-manager.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { FakeClock, flush } from '../helpers/fake-clock.js';
import { captureLogger, ok, startGentokenServer, type Reply, type Responder } from '../helpers/gentoken-server.js';
import { testTls } from '../helpers/tls.js';

const PASSWORD = 'pw-Very-Secret-42';
const API_KEY = 'apikey-0123456789';

interface Setup {
  ttl?: number;
  renewAt?: number;
  maxLifetimeSeconds?: number;
  random?: () => number;
  file?: string;
}

/** Deterministic uniform numbers in [0, 1). */
function seeded(seed: number): () => number {
  return () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

/**
 * A manager wired to a real HTTPS gentoken server through the real token client, on a fake
 * clock. `advance` moves the clock and lets each started token request complete.
 */
async function setup(s: Setup = {}) {
  const issued: string[] = [];
  const issue = (ttl = s.ttl ?? 900): Reply => {
    issued.push(`tkn-${issued.length + 1}-${'x'.repeat(12)}`);
    return ok(issued.at(-1)!, ttl);
  };
  let script: Responder = () => issue();
  const server = await startGentokenServer((req, i) => script(req, i));
  const real = createTokenClient({ baseUrl: server.url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 5000 });
  const clock = new FakeClock();
  const calls: number[] = [];
  const pending = new Set<Promise<unknown>>();
  const client = {
    requestToken(c: Credentials) {
      calls.push(clock.now());
      const p = real.requestToken(c);
      pending.add(p);
      const done = () => pending.delete(p);
      p.then(done, done);
      return p;
    },
  };
  const settle = async () => {
    await flush();
    while (pending.size) {
      await Promise.allSettled([...pending]);
      await flush();
    }
  };
  const log = captureLogger();
  const results: RefreshResult[] = [];
  let creds: Credentials = { apiKey: API_KEY, password: PASSWORD, rkObjectId: 'obj-1', version: 1 };
  const secrets = new SecretSet();
  const manager = new TokenManager({
    client, credentials: { current: () => creds }, clock, logger: log.logger, secrets,
    random: s.random ?? (() => 0.5),
    onRefresh: (result, seconds) => {
      assert.ok(seconds >= 0);
      results.push(result);
    },
    options: { renewAt: s.renewAt ?? 0.66, maxLifetimeSeconds: s.maxLifetimeSeconds ?? 900, tokenTimeoutMs: 10_000, file: s.file },
  });
  return {
    server, clock, manager, calls, results, log, secrets, issued, issue, settle,
    set respond(fn: Responder) {
      script = fn;
    },
    setCredentials(c: Partial<Credentials>) {
      creds = { ...creds, ...c, version: creds.version + 1 };
    },
    advance: (ms: number) => clock.advanceAsync(ms, settle),
    /** Stops everything and checks that no secret ever reached the logs. */
    async close() {
      await manager.stop();
      await real.close();
      await server.close();
      await flush();
      const text = log.text();
      for (const secret of [PASSWORD, API_KEY, ...issued]) assert.ok(!text.includes(secret), `log leaks ${secret}`);
      for (const t of issued) assert.ok(secrets.has(t), 'every token is registered as a secret');
    },
  };
}

async function started(s: Setup = {}) {
  const t = await setup(s);
  t.manager.start();
  await t.advance(0);
  return t;
}

/** Settles at once into the token or the error, so a rejection is never unhandled while the test works. */
function outcome(p: TokenSnapshot | Promise<TokenSnapshot | undefined>): Promise<TokenSnapshot | Error | undefined> {
  return Promise.resolve(p).catch((err: unknown) => err as Error);
}

function deferred() {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  return { gate, release };
}

describe('token manager: schedule', () => {
  it('obtains a token at start and renews at 66 % of its lifetime, moved earlier by the jitter', async () => {
    for (const [r, renewMs] of [[0, 594_000], [0.5, 594_000 - 29_700], [0.999, 594_000 - 59_340.6]] as const) {
      const t = await started({ random: () => r });
      assert.equal(t.calls.length, 1);
      const first = t.manager.current();
      assert.equal(first?.generation, 1);
      assert.equal(first?.value, t.issued[0]);
      assert.equal(first?.expiresAt, t.calls[0]! + 900_000);
      await t.advance(Math.ceil(renewMs) - 1);
      assert.equal(t.calls.length, 1, 'not renewed before its time');
      await t.advance(1);
      assert.equal(t.calls.length, 2);
      assert.ok(t.calls[1]! - t.calls[0]! >= 0.9 * 594_000 && t.calls[1]! - t.calls[0]! <= 594_000);
      assert.equal(t.manager.current()?.generation, 2);
      assert.deepEqual(t.results, ['success', 'success']);
      await t.close();
    }
  });

  it('logs each token with its fingerprint, lifetime, latency and renewal time', async () => {
    const t = await started();
    const line = t.log.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.message === 'token obtained');
    assert.equal(line?.level, 'info');
    assert.equal(line?.fingerprint, t.manager.current()?.fingerprint);
    assert.match(String(line?.fingerprint), /^[0-9a-f]{8}$/);
    assert.equal(line?.lifetimeSeconds, 900);
    assert.equal(line?.renewInSeconds, 564.3);
    assert.equal(typeof line?.latencyMs, 'number');
    await t.close();
  });

  it('never returns a token inside its expiry margin, even while renewal keeps failing', async () => {
    const t = await started();
    t.respond = () => ({ status: 503 });
    await t.advance(894_999);
    assert.equal(t.manager.current()?.generation, 1, 'kept while still valid');
    assert.equal(t.manager.status().ready, true);
    await t.advance(1);
    assert.equal(t.manager.current(), undefined);
    assert.deepEqual(t.manager.status(), { ready: false, reason: 'auth server failed (HTTP 503)' });
    await assert.rejects(Promise.resolve(t.manager.acquire()), { message: 'auth server failed (HTTP 503)' });
    await t.close();
  });

  it('works with a 2-second lifetime: always a usable token, never an expired one', async () => {
    const t = await started({ ttl: 2 });
    for (let i = 0; i < 200; i++) {
      await t.advance(50);
      const token = t.manager.current();
      assert.ok(token, `no token at step ${i}`);
      assert.ok(t.clock.now() < token.expiresAt - 200, 'within the 10 % margin');
    }
    assert.ok(t.calls.length >= 7 && t.calls.length <= 9, `${t.calls.length} renewals in 10 s`);
    await t.close();
  });

  it('works with a 6-hour lifetime when maxLifetimeSeconds allows it, and caps it otherwise', async () => {
    const t = await started({ ttl: 21_600, maxLifetimeSeconds: 21_600, random: () => 0 });
    assert.equal(t.manager.current()?.lifetimeSeconds, 21_600);
    await t.advance(14_256_000 - 1);
    assert.equal(t.calls.length, 1);
    await t.advance(1);
    assert.equal(t.calls.length, 2);
    await t.close();
    const capped = await started({ ttl: 21_600 });
    assert.equal(capped.manager.current()?.lifetimeSeconds, 900);
    await capped.close();
  });

  it('clamps timers for a huge ttl and still renews on time (docs/traps.md T15)', async () => {
    const t = await started({ ttl: 1e10, maxLifetimeSeconds: 1e10, random: () => 0 });
    const renewAt = t.calls[0]! + 0.66 * 1e13;
    assert.ok(t.clock.nextDelay()! <= MAX_TIMER_MS);
    t.clock.advance(30 * 86_400_000); // past one clamped timer
    await t.settle();
    assert.equal(t.calls.length, 1, 'a clamped timer did not renew early');
    t.clock.advance(renewAt - t.clock.now() - 1);
    await t.settle();
    assert.equal(t.calls.length, 1);
    await t.advance(1);
    assert.equal(t.calls.length, 2);
    await t.close();
  });

  it('reports age and expiry on the monotonic clock, wall-clock times as ISO (what the token gauges render)', async () => {
    const t = await setup();
    const idle = t.manager.view();
    assert.deepEqual([idle.ready, idle.ageSeconds, idle.expiresInSeconds, idle.expiresAt, idle.nextAttemptAt], [false, 0, 0, undefined, undefined]);
    t.manager.start();
    await t.advance(0);
    const startWall = t.clock.wallNow();
    await t.advance(100_000);
    // random 0.5: renewal at 594 s minus 5 % of it = 564.3 s after the request.
    const v = t.manager.view();
    assert.deepEqual([v.ready, v.ageSeconds, v.expiresInSeconds, v.expiresAt, v.nextAttemptAt], [
      true, 100, 800, new Date(startWall + 900_000).toISOString(), new Date(startWall + 564_300).toISOString(),
    ]);
    await t.close();
  });
});

describe('token manager: single flight and invalidation', () => {
  it('10 concurrent acquire() during the first request share one gentoken call', async () => {
    const t = await setup();
    const { gate, release } = deferred();
    t.respond = async () => (await gate, t.issue());
    await assert.rejects(Promise.resolve(t.manager.acquire()), { message: 'no token yet' });
    t.manager.start();
    await t.server.received(1);
    const waiting = Array.from({ length: 10 }, () => t.manager.acquire());
    release();
    const tokens = await Promise.all(waiting);
    assert.equal(t.server.requests.length, 1);
    assert.ok(tokens.every((x) => x === tokens[0] && x.generation === 1));
    await t.close();
  });

  it('a routine renewal never blocks: acquire() stays synchronous while it is in flight', async () => {
    const t = await started({ random: () => 0 });
    const { gate, release } = deferred();
    t.respond = async () => (await gate, t.issue());
    t.clock.advance(594_000);
    await t.server.received(2);
    const during = t.manager.acquire();
    assert.ok(!(during instanceof Promise));
    assert.equal(during.generation, 1);
    release();
    await t.settle();
    assert.equal(t.manager.current()?.generation, 2);
    await t.close();
  });

  it('a burst of upstream 401s for one generation makes one gentoken call', async () => {
    const t = await started();
    const renewed = await Promise.all(Array.from({ length: 20 }, () => t.manager.invalidate(1, '/x')));
    assert.equal(t.calls.length, 2);
    assert.ok(renewed.every((x) => x?.generation === 2));
    await t.close();
  });

  it('a 401 for an older generation resolves with the current token without a request', async () => {
    const t = await started();
    await t.manager.invalidate(1, '/x');
    const again = await t.manager.invalidate(1, '/x');
    assert.equal(again?.generation, 2);
    assert.equal(t.calls.length, 2);
    await t.close();
  });

  it('does not reuse a routinely renewed token for a 401 on the older one: it may predate the revocation', async () => {
    const t = await started({ random: () => 0 });
    await t.advance(594_000);
    assert.equal(t.manager.current()?.generation, 2);
    assert.equal(t.calls.length, 2);
    // A request that carried generation 1 was rejected after generation 2 was minted.
    const renewed = await t.manager.invalidate(1, '/x');
    assert.equal(renewed?.generation, 3);
    assert.equal(t.calls.length, 3);
    await t.close();
  });

  it('starts at most one 401-triggered refresh per second, deferring later ones to the end of the window', async () => {
    const t = await started();
    await t.manager.invalidate(1, '/x');
    assert.equal(t.calls.length, 2);
    // A second revocation within the window: every 401 waits for one deferred refresh.
    const deferred = Array.from({ length: 5 }, () => t.manager.invalidate(2, '/x'));
    await t.advance(500);
    assert.equal(t.calls.length, 2, 'no gentoken call inside the window');
    await t.advance(500);
    const renewed = await Promise.all(deferred);
    assert.ok(renewed.every((x) => x?.generation === 3));
    assert.equal(t.calls.length, 3);
    await t.close();
  });

  it('a fresh token refused on one path with nothing succeeding slows renewals down; refused on a second path, token.attach is suspect and 401s pass back at once', async () => {
    const t = await started();
    // Every token is rejected everywhere: nothing ever succeeds.
    assert.equal((await t.manager.invalidate(1, '/a'))?.generation, 2); // renewed for the replay
    t.manager.answered(2, 401, '/a', 1); // the replay is refused too: interval 2 s
    assert.match(t.log.text(), /slowing down 401-triggered renewals/);
    assert.equal((t.manager.view().attachSuspect !== undefined), false, 'one path is not enough');
    // The same fresh token refused on a second path, nothing succeeding: token.attach.
    assert.equal(await t.manager.invalidate(2, '/b?id=7'), undefined, 'passed back, no renewal');
    assert.equal(t.calls.length, 2);
    assert.equal((t.manager.view().attachSuspect !== undefined), true);
    assert.match(t.log.text(), /token\.attach probably presents the token[^"]*--probe \/b --discover-attach/);
    assert.match(t.manager.warnings()[0]!, /requests get 401 even with freshly obtained tokens/);
    // While suspect: no wait, and a renewal only once the slowed interval has passed.
    await t.advance(1000);
    assert.equal(await t.manager.invalidate(2, '/c'), undefined);
    assert.equal(t.calls.length, 2);
    await t.advance(1000);
    assert.equal((await t.manager.invalidate(2, '/c'))?.generation, 3);
    assert.equal(t.calls.length, 3);
    t.manager.answered(3, 200, '/c', 2); // the replay succeeded: cleared
    assert.equal((t.manager.view().attachSuspect !== undefined), false);
    assert.deepEqual(t.manager.warnings(), []);
    await t.close();
  });

  it('does not slow down for revocations once the renewed token succeeded (the rule starts over)', async () => {
    const t = await started();
    await t.manager.invalidate(1, '/x'); // gen 2, minted after a 401
    t.manager.answered(2, 200, '/x', 1); // the replay succeeded with it
    await t.advance(10_000);
    await t.manager.invalidate(2, '/x'); // a later, separate revocation
    t.manager.answered(3, 200, '/x', 2);
    await t.advance(1000);
    await t.manager.invalidate(3, '/x'); // and another one a second later is still renewed, not passed back
    assert.equal(t.calls.length, 4);
    assert.equal(t.manager.current()?.generation, 4);
    await t.close();
  });

  it('keeps serving a valid token when the 401-triggered renewal fails on an auth-server fault', async () => {
    const t = await started();
    t.respond = () => ({ status: 500 });
    await assert.rejects(t.manager.invalidate(1, '/x'));
    assert.equal(t.manager.current()?.generation, 1, 'the token is still valid: keep using it');
    await t.close();
  });

  it('does not let 401s add gentoken calls while the auth server is failing', async () => {
    const t = await started({ random: () => 0 });
    t.respond = () => ({ status: 500 });
    await t.advance(594_000);
    assert.equal(t.calls.length, 2);
    const kept = await Promise.all(Array.from({ length: 5 }, () => t.manager.invalidate(1, '/x')));
    assert.equal(t.calls.length, 2);
    assert.ok(kept.every((x) => x === undefined), 'the 401s are passed back');
    assert.equal(t.manager.current()?.generation, 1, 'and the token stays in use');
    await t.close();
  });

  it('never hands out a token inside the expiry margin', async () => {
    // gentoken took 1.9 s of a 2 s lifetime: 100 ms are left, inside the 200 ms margin.
    const t = await setup({ ttl: 2 });
    const { gate, release } = deferred();
    t.respond = async () => (await gate, t.issue(2));
    t.manager.start();
    await t.server.received(1);
    const waiting = outcome(t.manager.acquire());
    t.clock.advance(1900);
    release();
    await t.settle();
    assert.equal(t.manager.current(), undefined, 'current() refuses it');
    const got = await waiting;
    assert.ok(got instanceof TokenUnavailableError, `the waiter got ${got instanceof Error ? got.message : `a token with ${got ? got.expiresAt - t.clock.now() : '(none)'} ms left`}`);
    await t.close();
  });

  it('never hands out a token inside the expiry margin to requests waiting after a 401', async () => {
    const t = await started();
    const { gate, release } = deferred();
    t.respond = async () => (await gate, t.issue(2));
    const waiting = outcome(t.manager.invalidate(1, '/x'));
    await t.server.received(2);
    t.clock.advance(1900);
    release();
    await t.settle();
    assert.equal(t.manager.current(), undefined);
    const got = await waiting;
    assert.ok(got instanceof TokenUnavailableError, `the waiter got ${got instanceof Error ? got.message : `a token with ${got ? got.expiresAt - t.clock.now() : '(none)'} ms left`}`);
    await t.close();
  });

  it('bounds the wait for an in-flight refresh by tokenTimeoutMs', async () => {
    const t = await setup();
    t.respond = () => ({ hang: true });
    t.manager.start();
    await t.server.received(1);
    const waiting = Promise.resolve(t.manager.acquire());
    t.clock.advance(10_000);
    await assert.rejects(waiting, (err: unknown) => err instanceof TokenUnavailableError && err.message === 'timed out waiting for a token');
    await t.close();
  });
});

describe('credential source: after an upstream 401', () => {
  const credentialsOf = (manager: TokenManager) => tokenCredentials(manager, compileAttachments(DEFAULT_ATTACH), new SecretSet());
  const bearer = (c: RouteCredentials | undefined) => c?.prepared.headers.find(([name]) => name.toLowerCase() === 'authorization')?.[1];

  it('hands out credentials with the renewed token', async () => {
    const t = await started();
    const source = credentialsOf(t.manager);
    const used = await source.acquire();
    const renewed = await source.renewAfterUnauthorized!(used, '/x');
    assert.equal(renewed?.generation, 2);
    assert.equal(bearer(renewed), `Bearer ${t.issued[1]}`);
    await t.close();
  });

  it('never hands back the rejected token while gentoken is failing', async () => {
    const t = await started({ random: () => 0 });
    t.respond = () => ({ status: 500 });
    await t.advance(594_000); // the renewal fails; the token is still valid
    const source = credentialsOf(t.manager);
    const used = source.current()!;
    assert.equal(used.generation, 1);
    assert.equal(await source.renewAfterUnauthorized!(used, '/x'), undefined, 'the 401 is passed back, not replayed with the same token');
    assert.equal(t.calls.length, 2, 'and the 401 adds no gentoken call');
    await t.close();
  });

  it('never hands back the rejected token while 401s are passed back (token.attach suspect)', async () => {
    const t = await started();
    const source = credentialsOf(t.manager);
    const first = await source.acquire();
    const renewed = await source.renewAfterUnauthorized!(first, '/a'); // generation 2, for the replay
    source.answered!(renewed!, 401, '/a', first); // refused too, nothing succeeds anywhere
    const used = source.current()!;
    assert.equal(used.generation, 2);
    assert.equal(await source.renewAfterUnauthorized!(used, '/b'), undefined, 'a second path: suspect, passed back');
    assert.equal((t.manager.view().attachSuspect !== undefined), true);
    assert.equal(t.calls.length, 2);
    await t.close();
  });

  it('hands out a newer token obtained meanwhile for a 401 on an older one', async () => {
    const t = await started();
    const source = credentialsOf(t.manager);
    const old = await source.acquire();
    await source.renewAfterUnauthorized!(old, '/x');
    t.respond = () => ({ status: 500 });
    const renewed = await source.renewAfterUnauthorized!(old, '/x');
    assert.equal(renewed?.generation, 2);
    await t.close();
  });
});

describe('token manager: failures and backoff', () => {
  for (const [name, reply, result, floor, base, cap, reason, level] of [
    ['500', { status: 500 }, 'error', 1000, 1000, 60_000, 'auth server failed (HTTP 500)', 'warn'],
    ['invalid 200', { status: 200, body: { token: 'a\r\nb', refreshToken: null, aliveSecondsTtl: 9 } }, 'error', 1000, 1000, 60_000, 'auth server sent an invalid response', 'warn'],
  ] as const) {
    it(`retries a ${name} with delays within [floor, min(cap, base·2ⁿ)] on the fake clock`, async () => {
      const t = await setup({ random: seeded(7) });
      t.respond = () => reply;
      t.manager.start();
      await t.advance(3_600_000);
      const delays = t.calls.slice(1).map((at, i) => at - t.calls[i]!);
      assert.ok(delays.length >= 10, `${delays.length} retries`);
      delays.forEach((d, n) => assert.ok(d >= floor && d <= Math.min(cap, base * 2 ** n), `retry ${n}: ${d} ms`));
      assert.ok(t.results.every((r) => r === result) && t.results.length === t.calls.length);
      assert.deepEqual(t.manager.status(), { ready: false, reason });
      await assert.rejects(Promise.resolve(t.manager.acquire()), { message: reason });
      const failure = t.log.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === level);
      assert.ok(failure, `a ${level} line`);
      await t.close();
    });
  }

  it('retries a 5xx 1 s after the failure at the soonest, whatever the draw (docs/troubleshooting.md: 1 s … 60 s)', async () => {
    for (const random of [() => 0, () => 0.3]) {
      const t = await setup({ random });
      t.respond = () => ({ status: 503 });
      t.manager.start();
      await t.advance(10_000);
      assert.equal(t.calls[1]! - t.calls[0]!, 1000, 'the first retry');
      assert.ok(t.calls.slice(2).every((at, i) => at - t.calls[i + 1]! >= 1000), 'every later retry');
      await t.close();
    }
  });

  for (const [name, reply, result, reason] of [
    ['401', { status: 401, body: { message: 'ApiKey blocked' } }, 'unauthorized', 'credentials rejected by the auth server'],
    ['403', { status: 403, body: { message: 'Forbidden' } }, 'error', /^gentoken refused \(HTTP 403\)/],
  ] as const) {
    it(`retries a gentoken ${name} on the lockout-safe schedule: 5 s doubling to 5 min, jitter only upward, ≤ 3 attempts in 30 s, ≤ 17 an hour`, async () => {
      for (const random of [() => 0, () => 0.999999, seeded(11)]) {
        const t = await setup({ random });
        t.respond = () => reply;
        t.manager.start();
        await t.advance(3 * 3_600_000);
        const delays = t.calls.slice(1).map((at, i) => at - t.calls[i]!);
        delays.forEach((d, n) => {
          const ceiling = Math.min(300_000, 5000 * 2 ** n);
          assert.ok(d >= ceiling && d <= ceiling * 1.2, `retry ${n}: ${d} ms, schedule ${ceiling} ms`);
        });
        const start = t.calls[0]!;
        assert.ok(t.calls.filter((c) => c - start < 30_000).length <= 3, 'at most 3 attempts in the first 30 s');
        for (const c of t.calls) assert.ok(t.calls.filter((u) => u >= c && u < c + 3_600_000).length <= 17, 'at most 17 in any hour');
        assert.ok(t.results.every((r) => r === result) && t.results.length === t.calls.length);
        assert.match(t.manager.status().reason ?? '', typeof reason === 'string' ? new RegExp(`^${reason}$`) : reason);
        assert.deepEqual(t.manager.liveness(), { live: true });
        const failure = t.log.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.level === 'error');
        assert.match(String(failure?.reason), name === '401' ? /ApiKey blocked/ : /403/);
        await t.close();
      }
    });
  }

  it('a corrected credential file is tried at once, whatever the schedule says', async () => {
    const t = await setup({ random: () => 0 });
    t.respond = (req) => (req.headers.apikey === API_KEY ? t.issue() : { status: 401, body: { message: 'unknown ApiKey' } });
    t.setCredentials({ apiKey: 'apikey-wrong-000003' });
    t.manager.start();
    await t.advance(200_000); // attempts at 0, 5, 15, 35, 75, 155 s; the next is due at 315 s
    assert.equal(t.calls.length, 6);
    t.setCredentials({ apiKey: API_KEY });
    await t.manager.rotate();
    assert.equal(t.calls.length, 7);
    assert.equal(t.manager.current()?.generation, 1);
    await t.close();
  });

  it('retries a mutual-TLS 400 (no client certificate sent) on the lockout-safe schedule: a configuration problem, logged as an error', async () => {
    const t = await setup({ random: () => 0 });
    t.respond = () => ({ status: 400, body: '<html><head><title>400 No required SSL certificate was sent</title></head><body><center><h1>400 Bad Request</h1></center><center>No required SSL certificate was sent</center></body></html>' });
    t.manager.start();
    await t.advance(3_600_000);
    const delays = t.calls.slice(1).map((at, i) => at - t.calls[i]!);
    assert.deepEqual(delays.slice(0, 7), [5000, 10_000, 20_000, 40_000, 80_000, 160_000, 300_000]);
    assert.ok(t.calls.length <= 17, `${t.calls.length} calls in an hour`);
    assert.match(t.manager.status().reason ?? '', /requires a client certificate .*set service\.certFile and service\.keyFile/);
    const failure = t.log.lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l.message === 'token request failed');
    assert.equal(failure?.level, 'error');
    assert.equal(failure?.retryInSeconds, 5);
    await t.close();
  });

  it('never retries in a tight loop, even with an unlucky random source', async () => {
    const t = await setup({ random: () => 0 });
    t.respond = () => ({ status: 502 });
    t.manager.start();
    await t.advance(10_000);
    assert.equal(t.calls.length, 11, 'one attempt every second (the floor)');
    await t.close();
  });

  it('keeps the old token during failures and recovers by itself', async () => {
    const t = await started({ random: () => 0 });
    t.respond = () => ({ status: 503 });
    await t.advance(700_000);
    assert.ok(t.calls.length > 3);
    assert.equal(t.manager.current()?.generation, 1);
    t.respond = () => t.issue();
    await t.advance(60_000);
    assert.equal(t.manager.current()?.generation, 2);
    assert.deepEqual(t.manager.status(), { ready: true });
    assert.ok(t.results.includes('error') && t.results.at(-1) === 'success');
    await t.close();
  });

  it('recovers from an unreachable auth server at start', async () => {
    const t = await setup({ random: () => 0 });
    t.respond = () => ({ status: 500 });
    t.manager.start();
    await t.advance(0);
    assert.deepEqual(t.manager.status(), { ready: false, reason: 'auth server failed (HTTP 500)' });
    t.respond = () => t.issue();
    await t.advance(1000);
    assert.equal(t.manager.current()?.generation, 1);
    await t.close();
  });
});

describe('token manager: rotation, token file, lifecycle', () => {
  it('rotates to a token obtained with the new credentials', async () => {
    const t = await started();
    t.setCredentials({ apiKey: 'apikey-rotated-0002', rkObjectId: 'obj-2' });
    await t.manager.rotate();
    const token = t.manager.current() as TokenSnapshot;
    assert.equal(token.generation, 2);
    assert.equal(token.apiKey, 'apikey-rotated-0002');
    assert.equal(token.rkObjectId, 'obj-2');
    assert.equal(t.server.requests[1]!.headers.apikey, 'apikey-rotated-0002');
    await t.close();
  });

  it('keeps the old token until it expires when the new credentials are rejected', async () => {
    const t = await started();
    t.respond = (req) => (req.headers.apikey === API_KEY ? t.issue() : { status: 401, body: { message: 'unknown ApiKey' } });
    t.setCredentials({ apiKey: 'apikey-wrong-000003' });
    await t.manager.rotate();
    assert.equal(t.manager.current()?.generation, 1);
    assert.equal(t.manager.current()?.apiKey, API_KEY);
    await flush();
    assert.ok(t.log.lines.some((l) => l.includes('keeping the previous token until it expires') && l.includes('"level":"error"')));
    await t.advance(895_000);
    assert.deepEqual(t.manager.status(), { ready: false, reason: 'credentials rejected by the auth server' });
    await t.close();
  });

  it('writes the token file atomically with mode 0600 on every renewal, and deletes it on a clean stop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'b2b-token-'));
    const file = join(dir, 'token');
    const t = await started({ file, random: () => 0 });
    await t.advance(594_000);
    // The write is real file I/O, off the fake clock: wait for it (bounded).
    for (let i = 0; i < 200 && (!existsSync(file) || readFileSync(file, 'utf8') !== t.issued[1]); i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(readFileSync(file, 'utf8'), t.issued[1]);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    assert.deepEqual(readdirSync(dir), ['token'], 'no temporary file left behind');
    await t.manager.stop();
    assert.deepEqual(readdirSync(dir), [], 'the token does not outlive the process');
    await t.close();
  });

  it('logs a token file failure and carries on', async () => {
    const t = await started({ file: join(tmpdir(), 'no-such-dir-b2b', 'token') });
    await t.manager.stop();
    await flush();
    assert.ok(t.log.lines.some((l) => l.includes('cannot write the token file')));
    assert.equal(t.manager.current()?.generation, 1);
    await t.close();
  });

  it('stop is idempotent, safe before start, and a request in flight schedules nothing after it', async () => {
    const idle = await setup();
    await idle.manager.stop();
    idle.manager.start();
    assert.equal(idle.calls.length, 0);
    await idle.close();

    const t = await setup();
    const { gate, release } = deferred();
    t.respond = async () => (await gate, t.issue());
    t.manager.start();
    await t.server.received(1);
    await t.manager.stop();
    await t.manager.stop();
    release();
    await t.settle();
    assert.equal(t.clock.pending, 0);
    await t.close();
  });
});
