import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatChallenge, parseChallenges } from '../../src/doctor/www-authenticate.js';

// Examples from the RFCs themselves and from real server stacks.
describe('WWW-Authenticate parsing', () => {
  it('reads the RFC 9110 §11.6.1 example: two challenges, quoted-pair in a value, a token value', () => {
    const header = 'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"';
    assert.deepEqual(parseChallenges(header), [
      { scheme: 'Newauth', params: { realm: 'apps', type: '1', title: 'Login to "apps"' } },
      { scheme: 'Basic', params: { realm: 'simple' } },
    ]);
  });

  it('reads RFC 6750 §3 Bearer errors', () => {
    const [c] = parseChallenges('Bearer realm="example", error="invalid_token", error_description="The access token expired"');
    assert.equal(c!.scheme, 'Bearer');
    assert.deepEqual(c!.params, { realm: 'example', error: 'invalid_token', error_description: 'The access token expired' });
    assert.equal(formatChallenge(c!), 'Bearer realm="example", error="invalid_token", error_description="The access token expired"');
  });

  it('reads a bare scheme (Django REST framework TokenAuthentication sends "Token"), a token68 and repeated headers', () => {
    assert.deepEqual(parseChallenges('Token'), [{ scheme: 'Token', params: {} }]);
    assert.deepEqual(parseChallenges('Negotiate YIIB9wYGKwYBBQUCoIIB7TCCAemgAwIBAQ==, Bearer'), [
      { scheme: 'Negotiate', params: {}, token68: 'YIIB9wYGKwYBBQUCoIIB7TCCAemgAwIBAQ==' },
      { scheme: 'Bearer', params: {} },
    ]);
    assert.deepEqual(parseChallenges(['Bearer realm="a"', 'ApiToken']).map((c) => c.scheme), ['Bearer', 'ApiToken']);
  });

  it('stops at what does not parse instead of throwing', () => {
    assert.deepEqual(parseChallenges('Bearer realm="unterminated'), [{ scheme: 'Bearer', params: {} }]);
    assert.deepEqual(parseChallenges(''), []);
    assert.deepEqual(parseChallenges(undefined), []);
  });
});
