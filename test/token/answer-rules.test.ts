import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AnswerRules, ATTACH_EVIDENCE_ANSWERS, isRefusal, isSuccess, MAX_RENEW_INTERVAL_MS, PATH_MEMORY_MS, SUPERSEDED_THRESHOLD, SUPERSEDED_WINDOW_MS,
} from '../../src/token/answers/answer-rules.js';
import { MAX_PATH_KEY, pathKey, PathMemory } from '../../src/token/answers/path-memory.js';

/** Rules on a hand-moved clock. */
function rules() {
  let now = 1_000_000;
  const r = new AnswerRules(() => now);
  return { r, advance: (ms: number) => (now += ms), get now() { return now; } };
}

const token = (generation: number, proven: boolean, obtainedAt = 0) => ({ generation, obtainedAt, lifetimeSeconds: 900, proven });

describe('answer rules: what a status says', () => {
  it('success is 2xx and 304; a refusal is a 3xx but 304 or a 4xx but 408 and 429; 5xx is neither', () => {
    assert.deepEqual([200, 204, 299, 304].map(isSuccess), [true, true, true, true]);
    assert.deepEqual([301, 302, 400, 401, 403, 404, 500].map(isSuccess), [false, false, false, false, false, false, false]);
    assert.deepEqual([302, 400, 401, 403, 404, 410].map(isRefusal), [true, true, true, true, true, true]);
    assert.deepEqual([200, 304, 408, 429, 500, 502, 503].map(isRefusal), [false, false, false, false, false, false, false]);
  });
});

describe('answer rules: a path\'s own 401', () => {
  it('a fresh token refused on a key that other keys accept: remembered once the fresh token succeeds elsewhere, then passed back without renewing', () => {
    const { r } = rules();
    r.answered(1, 200, '/objects/a');
    assert.equal(r.unauthorized(1, '/objects/secret?x=1'), 'judge', 'a key never seen to work');
    assert.deepEqual(r.replayed(token(1, true), 2, 401, '/objects/secret?x=1'), { kind: 'path-own', path: '/objects/secret' });
    // The same fresh token on the same key before it is seen to succeed elsewhere: renew only when due.
    assert.equal(r.unauthorized(2, '/objects/secret?x=1'), 'renew-if-due');
    // Another query or another method is another key: what the service judges.
    assert.equal(r.unauthorized(2, '/objects/secret'), 'judge');
    assert.equal(r.unauthorized(2, '/objects/secret?x=1', 'DELETE'), 'judge');
    r.answered(2, 200, '/objects/a');
    assert.equal(r.unauthorized(2, '/objects/secret?x=1'), 'newly-remembered');
    assert.equal(r.unauthorized(3, '/objects/secret?x=1'), 'remembered', 'later tokens too');
    assert.equal(r.unauthorized(3, '/objects/secret?y=2'), 'judge', 'never the other queries');
    assert.equal(r.suspect, undefined);
    // A success on the key itself forgets it, and it has worked from then on: a 401 there is a revocation.
    r.answered(3, 200, '/objects/secret?x=1');
    assert.equal(r.unauthorized(3, '/objects/secret?x=1'), 'renew');
  });

  it('a 401 on a key that worked is a revocation whatever the memory holds; the first success of each token and every success while watching are what worked', () => {
    const { r } = rules();
    r.answered(1, 200, '/objects/a');
    r.answered(1, 200, '/objects/b'); // not the first success of its token, nothing watched: not recorded (two comparisons)
    assert.equal(r.workedKeys, 1);
    assert.equal(r.unauthorized(1, '/objects/a'), 'renew');
    assert.equal(r.unauthorized(1, '/objects/b'), 'judge');
    // The same path refused for another query and another method: the app's key is untouched.
    r.replayed(token(1, true), 2, 401, '/objects/a?id=deny');
    r.replayed(token(2, true), 3, 401, '/objects/a', 'DELETE');
    r.answered(3, 200, '/objects/b'); // watched now: recorded
    assert.equal(r.unauthorized(3, '/objects/a?id=deny'), 'newly-remembered');
    assert.equal(r.unauthorized(3, '/objects/a', 'DELETE'), 'newly-remembered');
    assert.equal(r.unauthorized(3, '/objects/a'), 'renew');
    assert.equal(r.unauthorized(3, '/objects/b'), 'renew');
  });

  it('judgements have their own interval: doubling after each that found a key\'s own 401, starting over when a renewal helped; the revocations\' interval untouched', () => {
    const { r } = rules();
    r.answered(1, 200, '/a');
    assert.equal(r.judgeIntervalMs, 1000);
    assert.equal(r.judgementsHelp, true);
    for (let g = 1; g <= 3; g++) assert.equal(r.replayed(token(g, false), g + 1, 401, `/secret-${g}`).kind, 'path-own');
    assert.equal(r.judgeIntervalMs, 8000);
    assert.equal(r.judgementsHelp, false);
    assert.equal(r.renewIntervalMs, 1000, 'never the revocations\' interval');
    assert.equal(r.holdsForRenewal, true);
    assert.equal(r.suspect, undefined, 'nor token.attach suspect');
    for (let g = 4; g <= 20; g++) r.replayed(token(g, false), g + 1, 401, `/secret-${g}`);
    assert.equal(r.judgeIntervalMs, MAX_RENEW_INTERVAL_MS);
    r.replayed(token(21, true, 0), 22, 200, '/a');
    assert.equal(r.judgeIntervalMs, 1000);
  });

  it('a success with the refused token counts even when an older token\'s success is answered after it', () => {
    const { r } = rules();
    r.answered(1, 200, '/a');
    r.replayed(token(1, true), 2, 401, '/secret');
    r.answered(2, 200, '/a'); // the fresh token succeeds elsewhere
    r.answered(1, 200, '/b'); // a request still carrying the old one is answered last
    assert.equal(r.unauthorized(2, '/secret'), 'newly-remembered');
  });

  it('the memory expires', () => {
    const t = rules();
    t.r.answered(1, 200, '/a');
    t.r.replayed(token(1, true), 2, 401, '/secret');
    t.r.answered(2, 200, '/a');
    assert.equal(t.r.unauthorized(2, '/secret'), 'newly-remembered');
    t.advance(PATH_MEMORY_MS);
    assert.equal(t.r.unauthorized(2, '/secret'), 'judge');
  });

  it('renewals that did not help space the next ones out; one that helped starts over', () => {
    const { r } = rules();
    assert.equal(r.renewIntervalMs, 1000);
    assert.equal(r.holdsForRenewal, true);
    for (let g = 1; g <= 10; g++) assert.equal(r.replayed(token(g, false), g + 1, 401, '/secret').kind, 'refused');
    assert.equal(r.renewIntervalMs, MAX_RENEW_INTERVAL_MS);
    assert.equal(r.holdsForRenewal, false);
    r.replayed(token(11, false, 0), 12, 200, '/b');
    assert.equal(r.renewIntervalMs, 1000);
  });

  it('a path\'s own 401s (objects the key may not see) never slow the renewals a later revocation needs', () => {
    const { r } = rules();
    r.answered(1, 200, '/a');
    for (let g = 1; g <= 7; g++) assert.equal(r.replayed(token(g, true), g + 1, 401, `/objects/forbidden-${g}`).kind, 'path-own');
    assert.equal(r.renewIntervalMs, 1000, 'the interval is untouched');
    assert.equal(r.holdsForRenewal, true, 'a revocation\'s 401s still wait for the one renewal');
  });
});

describe('answer rules: token.attach suspect', () => {
  it('401 form: fresh tokens refused on two distinct paths, nothing succeeding', () => {
    const { r } = rules();
    assert.equal(r.unauthorized(1, '/a'), 'renew');
    assert.deepEqual(r.replayed(token(1, false), 2, 401, '/a'), { kind: 'refused', path: '/a' });
    assert.equal(r.suspect, undefined, 'one path is not enough');
    assert.equal(r.unauthorized(2, '/a?again'), 'renew', 'another key; nothing has worked yet: every 401 is evidence about the token');
    assert.equal(r.suspect, undefined, 'the same path again is not a second path');
    assert.equal(r.unauthorized(2, '/b'), 'suspect');
    assert.equal(r.suspect, 'unauthorized');
    assert.equal(r.suspectPath, '/b');
    assert.equal(r.answered(2, 200, '/c'), 'cleared');
    assert.equal(r.suspect, undefined);
  });

  it('answers form: the threshold of refusals on two paths with tokens that never succeeded', () => {
    const { r } = rules();
    for (let i = 1; i < ATTACH_EVIDENCE_ANSWERS; i++) assert.equal(r.answered(1, 400, '/a'), undefined);
    assert.equal(r.answered(1, 400, '/a'), undefined, 'one path only');
    assert.equal(r.answered(1, 302, '/b'), 'suspect');
    assert.equal(r.suspect, 'answers');
    assert.deepEqual(r.evidence, { answers: ATTACH_EVIDENCE_ANSWERS + 1, lastStatus: 302 });
    assert.equal(r.answered(2, 404, '/c'), undefined, 'said once');
    assert.equal(r.answered(2, 304, '/c'), 'cleared');
  });

  it('the evidence spans renewals until a success; 5xx and 429 are no evidence; answers to a token that succeeded never count', () => {
    const { r } = rules();
    for (let i = 0; i < 20; i++) r.answered(1, i % 2 ? 503 : 429, `/x${i}`);
    assert.equal(r.evidence.answers, 0);
    for (let g = 1; g <= 9; g++) r.answered(g, 403, `/p${g}`);
    assert.equal(r.answered(10, 403, '/p10'), 'suspect');
    r.answered(10, 200, '/ok');
    for (let i = 0; i < 50; i++) assert.equal(r.answered(10, 404, `/missing/${i}`), undefined);
    assert.equal(r.suspect, undefined);
  });

  it('refusals after renewals are no evidence once any request has succeeded (a correct config whose app asks for missing objects)', () => {
    const { r } = rules();
    r.answered(1, 200, '/ok');
    for (let g = 2; g <= 6; g++) {
      // Every renewal starts a token no request has succeeded with yet.
      for (let i = 0; i < ATTACH_EVIDENCE_ANSWERS + 2; i++) assert.equal(r.answered(g, 404, `/missing/${g}/${i % 3}`), undefined);
    }
    assert.equal(r.suspect, undefined);
    assert.equal(r.evidence.answers, 0);
  });
});

describe('answer rules: superseded', () => {
  it('a young token that had succeeded, rejected and healed by the renewal, once per token; the rule trips once per episode', () => {
    const t = rules();
    const verdicts = [];
    for (let g = 1; g <= SUPERSEDED_THRESHOLD + 1; g++) {
      t.r.answered(g, 200, '/a');
      const rejected = token(g, true, t.now - 1000);
      verdicts.push(t.r.replayed(rejected, g + 1, 200, '/a'));
      // Other requests' replays of the same rejection do not count again.
      assert.equal(t.r.replayed(rejected, g + 1, 200, '/b').kind, 'revoked');
    }
    assert.deepEqual(verdicts.map((v) => v.kind), ['superseded', 'superseded', 'superseded', 'superseded']);
    assert.deepEqual(verdicts.map((v) => 'tripped' in v && v.tripped), [false, false, true, false]);
    t.advance(SUPERSEDED_WINDOW_MS);
    t.r.answered(20, 200, '/a');
    assert.deepEqual(t.r.replayed(token(20, true, t.now - 1000), 21, 200, '/a'), { kind: 'superseded', count: 1, tripped: false });
  });

  it('never from a path\'s own 401, an old token, or a token that never succeeded', () => {
    const t = rules();
    t.r.answered(1, 200, '/a');
    assert.equal(t.r.replayed(token(1, true, t.now - 1000), 2, 401, '/secret').kind, 'path-own');
    assert.equal(t.r.replayed(token(2, true, t.now - 600_000), 3, 200, '/a').kind, 'revoked', 'past half its lifetime');
    assert.equal(t.r.replayed(token(3, false, t.now - 1000), 4, 200, '/a').kind, 'revoked', 'never succeeded');
  });
});

describe('path memory', () => {
  it('keys by the path without its query, cut to a bound', () => {
    assert.equal(pathKey('/objects/7?fields=a'), '/objects/7');
    assert.equal(pathKey('/x'), '/x');
    assert.equal(pathKey(`/${'a'.repeat(1000)}`).length, MAX_PATH_KEY);
  });

  it('is bounded (the oldest judgement goes first) and expires', () => {
    const m = new PathMemory<number>(3, 1000);
    for (let i = 0; i < 5; i++) m.set(`/p${i}`, i, i);
    assert.equal(m.size, 3);
    assert.equal(m.get('/p0', 10), undefined);
    assert.equal(m.get('/p4', 10), 4);
    assert.equal(m.get('/p2', 1002), undefined, 'expired');
    m.prune(2000);
    assert.equal(m.size, 0);
    assert.throws(() => new PathMemory(0, 10), RangeError);
  });
});
