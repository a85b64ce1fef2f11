import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenUnavailableError } from '../../src/shared/errors.js';
import { answerForUpstreamError, errorCode } from '../../src/upstream/upstream-error.js';

const withCode = (code: string, cause?: unknown) => Object.assign(new Error('x'), { code, cause });

describe('answerForUpstreamError (the one error → status table)', () => {
  const table: Array<[unknown, number, RegExp]> = [
    [withCode('ECONNREFUSED'), 502, /refused/],
    [withCode('ECONNRESET'), 502, /reset/],
    [withCode('UND_ERR_SOCKET'), 502, /reset/],
    [withCode('EPIPE'), 502, /reset/],
    [withCode('UND_ERR_HEADERS_TIMEOUT'), 504, /in time/],
    [withCode('UND_ERR_CONNECT_TIMEOUT'), 504, /in time/],
    [withCode('SIDECAR_ERR_UPSTREAM_TIMEOUT'), 504, /in time/],
    [withCode('ETIMEDOUT'), 504, /in time/],
    [withCode('ENOTFOUND'), 502, /resolved/],
    [withCode('UNABLE_TO_VERIFY_LEAF_SIGNATURE'), 502, /certificate/],
    [withCode('DEPTH_ZERO_SELF_SIGNED_CERT'), 502, /certificate/],
    [withCode('ERR_TLS_CERT_ALTNAME_INVALID'), 502, /certificate/],
    [withCode('CERT_HAS_EXPIRED'), 502, /certificate/],
    [withCode('UND_ERR_CONNECT', withCode('ECONNREFUSED')), 502, /refused/],
    [new TokenUnavailableError('no token yet'), 503, /no token yet/],
    [new Error('weird'), 502, /failed/],
    ['not even an error', 502, /failed/],
  ];
  for (const [err, status, message] of table) {
    it(`${errorCode(err)} → ${status}`, () => {
      const answer = answerForUpstreamError(err);
      assert.equal(answer.status, status);
      assert.match(answer.message, message);
    });
  }

  it('never passes upstream error text to the client', () => {
    const answer = answerForUpstreamError(withCode('ECONNRESET'));
    assert.doesNotMatch(answer.message, /x/);
  });
});
