import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenState, type TokenSnapshot } from '../../src/token/token-state.js';
import { UnauthorizedFlow } from '../../src/token/answers/unauthorized-flow.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { captureLogger } from '../helpers/gentoken-server.js';

/** The flow alone: a token source whose acquisition mints the next token at once, on the fake clock. */
function setup() {
  const clock = new FakeClock();
  const log = captureLogger();
  const state = new TokenState();
  let renewals = 0;
  let superseded = 0;
  const mint = (trigger: string): TokenSnapshot => {
    const token = state.obtained({ token: `token-value-${state.token ? state.token.generation + 1 : 1}`, refreshToken: null, aliveSecondsTtl: 900 } as never, { apiKey: 'k', password: 'p', version: 1 }, clock.now(), clock.wallNow(), 900);
    flow.obtained(token, trigger, clock.now());
    return token;
  };
  const flow: UnauthorizedFlow = new UnauthorizedFlow({
    clock, logger: log.logger, state, onSuperseded: () => superseded++,
    tokenTimeoutMs: 5_000,
    source: {
      current: () => state.usable(clock.now()),
      inflight: () => undefined,
      mayCall: () => true,
      renewDueAt: () => Infinity,
      acquire: (trigger) => {
        renewals++;
        assert.equal(trigger, 'upstream 401');
        assert.equal(state.usable(clock.now()), undefined, 'the rejected token is held back while its renewal is on the wire');
        return Promise.resolve(mint('upstream 401'));
      },
      bounded: (p) => p,
    },
  });
  mint('start');
  return { clock, log, state, flow, renewals: () => renewals, superseded: () => superseded };
}

describe('the answers\' flow alone (fake clock)', () => {
  it('renews once on a first 401 and hands the fresh token to replay with', async () => {
    const { flow, renewals, log } = setup();
    const fresh = await flow.invalidate(1, '/pub/b2b/v1/objects/1');
    assert.equal(fresh?.generation, 2);
    assert.equal(renewals(), 1);
    assert.match(log.text(), /the service rejected the token; renewing/);
  });

  it('passes a path\'s own 401s back without renewing once the fresh token succeeds elsewhere', async () => {
    const { flow, renewals, clock } = setup();
    flow.answered(1, 200, '/b');
    await flow.invalidate(1, '/a');
    flow.answered(2, 401, '/a', 1); // the replay refused too: the path's own answer
    flow.answered(2, 200, '/b');
    clock.advance(5_000);
    assert.equal(await flow.invalidate(2, '/a'), undefined);
    assert.equal(renewals(), 1, 'no second gentoken call');
    assert.equal((flow.suspect() !== undefined), false);
  });

  it('nothing has worked yet: a path that refused a fresh token waits for the revocations\' slowed interval, not the judgements\'', { timeout: 10_000 }, async () => {
    const { flow, renewals, clock } = setup();
    await flow.invalidate(1, '/a');
    flow.answered(2, 401, '/a', 1); // refused too, nothing succeeding: the interval doubles to 2 s
    clock.advance(1_100);
    assert.equal(await flow.invalidate(2, '/a'), undefined, 'passed back');
    assert.equal(renewals(), 1);
    clock.advance(1_000);
    assert.equal((await flow.invalidate(2, '/a'))?.generation, 3, 'renewed once the 2 s have passed');
  });

  it('a walk over refused keys beside working traffic: judgements on their own doubling interval; a revocation on a key that worked renewed at once, every time', { timeout: 10_000 }, async () => {
    const { flow, renewals, clock, state } = setup();
    flow.answered(1, 200, '/app');
    let walked = 0;
    const judgeAt: number[] = [];
    for (let i = 0; i < 40; i++) {
      clock.advance(500);
      const g = state.token!.generation;
      const fresh = await flow.invalidate(g, `/secret-${walked++}`);
      if (fresh) {
        judgeAt.push(i);
        flow.answered(fresh.generation, 401, `/secret-${walked - 1}`, g);
      }
      flow.answered(state.token!.generation, 200, '/app');
    }
    // 20 s of walking, a refused key every 0.5 s: judgements at 0, 2, 6 and 14 s (each that found
    // the key's own 401 doubles the interval: 2, 4, 8, 16 s).
    assert.deepEqual(judgeAt, [0, 4, 12, 28]);
    const before = renewals();
    for (let i = 0; i < 3; i++) {
      clock.advance(1_000);
      const g = state.token!.generation;
      const fresh = await flow.invalidate(g, '/app');
      assert.equal(fresh?.generation, g + 1, 'a revocation: renewed at once');
      flow.answered(fresh!.generation, 200, '/app', g);
    }
    assert.equal(renewals(), before + 3);
  });

  it('uploads that cannot be sent again do not renew on every 401 of a path that answers 401 for its own reasons', async () => {
    const { flow, renewals, clock, state } = setup();
    flow.answered(1, 200, '/ok');
    for (let i = 0; i < 10; i++) {
      clock.advance(5_000);
      const generation = state.token!.generation;
      // A streamed PUT refused with 401: renewed, but no replay to tell whether that helped.
      const fresh = await flow.invalidate(generation, '/upload/secret');
      if (fresh) flow.unreplayed(fresh.generation, '/upload/secret');
      flow.answered(state.token!.generation, 200, '/ok'); // other traffic succeeds meanwhile
    }
    assert.equal(renewals(), 1, 'the second upload\'s 401 with the fresh token is the path\'s own answer');
    assert.equal((flow.suspect() !== undefined), false);
  });

  it('records a young proven token rejected where the renewal helped as superseded, with its time', async () => {
    const { flow, state, clock, superseded } = setup();
    flow.answered(1, 200, '/a');
    clock.advance(10_000);
    await flow.invalidate(1, '/a');
    flow.answered(2, 200, '/a', 1);
    assert.equal(superseded(), 1);
    assert.deepEqual(state.superseded, { lastAtWall: clock.wallNow(), inWindow: 1, holds: false, total: 1 });
  });

  it('suspects token.attach after refusals on two paths with no success, and warns until one succeeds', () => {
    const { flow } = setup();
    for (let i = 0; i < 10; i++) flow.answered(1, 400, i % 2 ? '/a' : '/b');
    assert.deepEqual(flow.suspect(), { evidence: 'answers', path: '/a' }, 'the path of the answer that tipped it');
    assert.match(flow.warnings()[0] ?? '', /no request has succeeded since the token was obtained/);
    flow.answered(1, 200, '/a');
    assert.equal(flow.suspect(), undefined);
    assert.deepEqual(flow.warnings(), []);
  });
});
