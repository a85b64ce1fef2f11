import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkRequestTarget } from '../../src/proxy/request-target.js';

describe('checkRequestTarget', () => {
  for (const ok of ['/', '/pub/b2b/v1/echo', '/a/b?x=1&y=%2F', '/a.b/c..d/.e', '/a%20b', '/l10n/api/translations/demo/web/en/',
    '/a;v=1/b', '/a/b;jsessionid=1', '/a/..b;x/c', '/a/.x;y', '/a//b', '/a/;x/b', '/a?b=/;x/..;/']) {
    it(`accepts ${ok}`, () => assert.equal(checkRequestTarget(ok), undefined));
  }
  const refused: Array<[string, RegExp]> = [
    ['http://other.example/x', /absolute-form/],
    ['https://other.example/x', /absolute-form/],
    ['other.example:443', /absolute path/],
    ['*', /absolute path/],
    ['//other.host/x', /must not start with \/\//],
    ['/..%2f', /encoded slashes/],
    ['/a/%2e%2e/b', /dot segments/],
    ['/a/../b', /dot segments/],
    ['/a/./b', /dot segments/],
    ['/a/..', /dot segments/],
    ['/a%5cb', /encoded slashes/],
    ['/a\\b', /encoded slashes/],
    ['/a%00b', /encoded slashes/],
    ['/a%zz', /malformed/],
    // A fragment never leaves the client; a query attachment would land after it.
    ['/pub/b2b/v1/objects/1#x', /must not contain #/],
    ['/a?b=1#c', /must not contain #/],
    // Tomcat, Jetty and Spring drop matrix parameters, so `..;x` is `..` there.
    ['/pub/b2b/v1/..;/..;/admin', /dot segments/],
    ['/pub/%2e%2e;/x', /dot segments/],
    ['/a/..%3b/b', /dot segments/],
    ['/a/.;x/b', /dot segments/],
    ['/a/..;jsessionid=1', /dot segments/],
    ['/a/%2E%2E%3Bx/b', /dot segments/],
    // ...and a parameter-only first segment makes the path start with `//`.
    ['/;x/evil.example/y', /must not start with \/\//],
    ['/%3b/evil.example/y', /must not start with \/\//],
  ];
  for (const [target, reason] of refused) {
    it(`refuses ${target}`, () => assert.match(checkRequestTarget(target) ?? '', reason));
  }
});
