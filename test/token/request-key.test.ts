import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_KEY_CHARS, requestKey } from '../../src/token/answers/request-key.js';
import { tokenManagerOptions } from '../../src/service/service-part.js';
import { validateConfig } from '../../src/config/validate-config.js';

/** The key a 401 is judged by (request-key.ts): what the service judges, written one way. */
describe('request keys', () => {
  const none = new Set<string>();

  it('method, path and query: each method and each query value is its own key', () => {
    assert.equal(requestKey('GET', '/objects', none), 'GET /objects');
    assert.notEqual(requestKey('DELETE', '/objects', none), requestKey('GET', '/objects', none));
    assert.notEqual(requestKey('GET', '/objects?id=deny', none), requestKey('GET', '/objects?id=1', none));
    assert.notEqual(requestKey('GET', '/objects?id=deny', none), requestKey('GET', '/objects', none));
  });

  it('the query normalised: parameters sorted, empty pairs and an empty query dropped', () => {
    const key = requestKey('GET', '/objects?b=2&a=1', none);
    assert.equal(key, 'GET /objects?a=1&b=2');
    for (const path of ['/objects?a=1&b=2', '/objects?&a=1&&b=2&']) assert.equal(requestKey('GET', path, none), key);
    assert.equal(requestKey('GET', '/objects?', none), 'GET /objects');
    assert.equal(requestKey('GET', '/objects?&', none), 'GET /objects');
  });

  it('token.attach\'s own query parameters left out, whatever their case or encoding (the sidecar strips the client\'s and appends its own)', () => {
    const ignored = new Set(['access_token']);
    const key = requestKey('GET', '/objects?id=1', ignored);
    for (const path of ['/objects?access_token=forged&id=1', '/objects?id=1&ACCESS_TOKEN=x', '/objects?%61ccess_token=x&id=1', '/objects?access_token&id=1']) {
      assert.equal(requestKey('GET', path, ignored), key, path);
    }
    assert.equal(requestKey('GET', '/objects?access_token=x', ignored), 'GET /objects');
  });

  it('bounded: a long key keeps its start and a hash of the whole, so two long keys sharing their start stay apart', () => {
    const long = `/objects?${'a'.repeat(400)}`;
    const a = requestKey('GET', `${long}&id=1`, none);
    const b = requestKey('GET', `${long}&id=deny`, none);
    assert.ok(a.length <= MAX_KEY_CHARS, String(a.length));
    assert.notEqual(a, b);
    assert.equal(requestKey('GET', `${long}&id=1`, none), a, 'the same key each time');
  });

  it('the token manager is told the names token.attach puts in the query', () => {
    const config = validateConfig({
      service: { baseUrl: 'https://service.test' },
      credentials: { apiKey: 'k', password: 'p' },
      token: { attach: [{ in: 'query', name: 'Access_Token', value: '{token}' }, { in: 'header', name: 'ApiKey', value: '{apiKey}' }] },
    });
    assert.deepEqual(tokenManagerOptions(config).attachQueryNames, ['access_token']);
  });
});
