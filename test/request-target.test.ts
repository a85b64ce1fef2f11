import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkRequestTarget } from '../src/request-target.js';

describe('checkRequestTarget', () => {
  for (const ok of ['/', '/pub/b2b/v1/echo', '/a/b?x=1&y=%2F', '/a.b/c..d/.e', '/a%20b', '/l10n/api/translations/demo/web/en/']) {
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
  ];
  for (const [target, reason] of refused) {
    it(`refuses ${target}`, () => assert.match(checkRequestTarget(target) ?? '', reason));
  }
});
