import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { admit, byLongestPrefix, pickRoute } from '../../src/proxy/admit.js';
import type { ProxyRoute } from '../../src/proxy/proxy-route.js';

/** A route as admit sees it: only its name, prefix and methods are read here. */
function route(name: 'service' | 'localization', prefix: string, methods?: string[]): ProxyRoute {
  return { name, prefix, methods: methods && new Set(methods) } as ProxyRoute;
}

describe('pickRoute', () => {
  const routes = byLongestPrefix([route('service', ''), route('localization', '/l10n')]);

  it('takes the longest prefix that matches on a segment boundary', () => {
    assert.equal(pickRoute(routes, '/l10n/api/x').name, 'localization');
    assert.equal(pickRoute(routes, '/l10n').name, 'localization');
    assert.equal(pickRoute(routes, '/l10n?x=1').name, 'localization');
  });

  it('does not take a prefix that only starts a longer segment', () => {
    assert.equal(pickRoute(routes, '/l10nx/api').name, 'service');
    assert.equal(pickRoute(routes, '/pub/b2b/v1/echo').name, 'service');
  });

  it('falls back to the last route when no prefix matches', () => {
    const prefixed = byLongestPrefix([route('service', '/svc'), route('localization', '/l10n')]);
    assert.equal(pickRoute(prefixed, '/other').name, prefixed[prefixed.length - 1]!.name);
  });
});

describe('admit', () => {
  it('gives the path with the route prefix removed, always starting with /', () => {
    const l10n = route('localization', '/l10n');
    assert.deepEqual(admit(l10n, '/l10n/api/a?b=1', 'GET', {}), { path: '/api/a?b=1' });
    assert.deepEqual(admit(l10n, '/l10n', 'GET', {}), { path: '/' });
    assert.deepEqual(admit(l10n, '/l10n?b=1', 'GET', {}), { path: '/?b=1' });
  });

  it('refuses a target that the prefix removal turns into a network-path reference', () => {
    const refused = admit(route('localization', '/l10n'), '/l10n//evil.example/x', 'GET', {});
    assert.equal('status' in refused && refused.status, 400);
  });

  it('refuses a method the route does not allow with 405 and the Allow header', () => {
    const refused = admit(route('localization', '/l10n', ['GET', 'HEAD']), '/l10n/a', 'POST', {});
    assert.deepEqual(refused, { status: 405, message: 'method POST not allowed on this route', headers: { allow: 'GET, HEAD' } });
  });

  it('refuses TRACE, and a method-override header asking for TRACE or TRACK, with 501', () => {
    const service = route('service', '');
    assert.equal((admit(service, '/a', 'TRACE', {}) as { status: number }).status, 501);
    for (const name of ['x-http-method-override', 'x-http-method', 'x-method-override']) {
      assert.equal((admit(service, '/a', 'POST', { [name]: ' track ' }) as { status: number }).status, 501, name);
    }
    assert.deepEqual(admit(service, '/a', 'POST', { 'x-http-method-override': 'PUT' }), { path: '/a' });
  });
});
