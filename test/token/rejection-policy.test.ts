import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ATTACH_SUSPECT_AFTER, MAX_RENEW_INTERVAL_MS, RejectionPolicy, SUPERSEDED_THRESHOLD, SUPERSEDED_WINDOW_MS } from '../../src/token/rejection-policy.js';

const token = (generation: number, afterUnauthorized: boolean, obtainedAt = 0) => ({ generation, obtainedAt, lifetimeSeconds: 900, afterUnauthorized });

describe('rejection policy (what a 401 says about the token)', () => {
  it('a fresh token rejected before any success slows renewals down and, from the second in a row, suspects token.attach', () => {
    const p = new RejectionPolicy();
    assert.deepEqual(p.rejected(token(1, false), 10), { kind: 'revoked' });
    assert.equal(p.renewIntervalMs, 1000);
    const first = p.rejected(token(2, true), 20);
    assert.deepEqual(first, { kind: 'fresh-rejected', consecutive: 1, suspect: false, enteredSuspect: false });
    assert.equal(p.renewIntervalMs, 2000);
    const second = p.rejected(token(3, true), 30);
    assert.deepEqual(second, { kind: 'fresh-rejected', consecutive: ATTACH_SUSPECT_AFTER, suspect: true, enteredSuspect: true });
    assert.equal(p.attachSuspect, true);
    for (let g = 4; g < 30; g++) p.rejected(token(g, true), g * 10);
    assert.equal(p.renewIntervalMs, MAX_RENEW_INTERVAL_MS);
  });

  it('starts over once a token is accepted: no state carries over from an earlier episode', () => {
    const p = new RejectionPolicy();
    p.rejected(token(2, true), 0);
    p.rejected(token(3, true), 0);
    assert.equal(p.attachSuspect, true);
    p.accepted(3);
    assert.equal(p.attachSuspect, false);
    assert.equal(p.renewIntervalMs, 1000);
    // The token was accepted, so its rejection now is a revocation, not a fresh rejection.
    assert.equal(p.rejected(token(3, true, 0), 600_000).kind, 'revoked');
  });

  it('a young accepted token rejected again and again is superseded; the rule trips once per episode', () => {
    const p = new RejectionPolicy();
    const verdicts = [];
    for (let g = 1; g <= SUPERSEDED_THRESHOLD + 1; g++) {
      p.accepted(g);
      verdicts.push(p.rejected(token(g, g > 1, g * 1000), g * 1000 + 500));
    }
    assert.deepEqual(verdicts.map((v) => v.kind), ['superseded', 'superseded', 'superseded', 'superseded']);
    assert.deepEqual(verdicts.map((v) => 'tripped' in v && v.tripped), [false, false, true, false]);
    // An old token's rejection (past half its lifetime) is an ordinary revocation.
    p.accepted(10);
    assert.equal(p.rejected(token(10, false, 0), 500_000).kind, 'revoked');
    // Outside the window the count starts over.
    p.accepted(11);
    const later = p.rejected(token(11, false, 10 * SUPERSEDED_WINDOW_MS), 10 * SUPERSEDED_WINDOW_MS + 1);
    assert.deepEqual(later, { kind: 'superseded', count: 1, tripped: false });
  });
});
