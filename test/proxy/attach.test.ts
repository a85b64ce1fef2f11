import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compileAttachments, rewriteCookie, rewriteQuery } from '../../src/proxy/attach.js';
import { DEFAULT_ATTACH } from '../../src/config/schema.js';

const vars = { token: 'tok-123', apiKey: 'key-456', rkObjectId: 'obj 7' };

describe('attachment templates', () => {
  it('renders the default attachments as Bearer token and ApiKey headers', () => {
    const prepared = compileAttachments(DEFAULT_ATTACH).prepare(vars);
    assert.deepEqual(prepared.headers, [['authorization', 'Bearer tok-123'], ['apikey', 'key-456']]);
    assert.equal(prepared.query, '');
    assert.equal(prepared.cookie, '');
  });

  it('renders header, query and cookie attachments with every placeholder', () => {
    const compiled = compileAttachments([
      { in: 'header', name: 'X-Auth', value: 'Token {token} for {rkObjectId}' },
      { in: 'query', name: 'rkObjectId', value: '{rkObjectId}' },
      { in: 'cookie', name: 'session', value: '{token}' },
    ]);
    const prepared = compiled.prepare(vars);
    assert.deepEqual(prepared.headers, [['x-auth', 'Token tok-123 for obj 7']]);
    assert.equal(prepared.query, 'rkObjectId=obj%207');
    assert.equal(prepared.cookie, 'session=tok-123');
    assert.deepEqual([...compiled.headerNames], ['x-auth']);
    assert.deepEqual([...compiled.queryNames], ['rkobjectid'], 'stored lower-case: stripped whatever the case');
    assert.deepEqual([...compiled.cookieNames], ['session']);
  });
});

describe('rewriteQuery', () => {
  const names = new Set(['rkobjectid']);
  it('appends to a path without a query', () => {
    assert.equal(rewriteQuery('/a/b', names, 'rkObjectId=1'), '/a/b?rkObjectId=1');
  });
  it('replaces a client-sent parameter of the same name and keeps the others in order', () => {
    assert.equal(rewriteQuery('/a?x=1&rkObjectId=evil&y=2', names, 'rkObjectId=1'), '/a?x=1&y=2&rkObjectId=1');
  });
  it('also removes a percent-encoded spelling of the name', () => {
    assert.equal(rewriteQuery('/a?%72kObjectId=evil', names, 'rkObjectId=1'), '/a?rkObjectId=1');
  });
  it('leaves paths untouched when there is nothing to do', () => {
    assert.equal(rewriteQuery('/a?x=1', new Set(), ''), '/a?x=1');
  });
  it('removes a client parameter whatever its case (servers such as ASP.NET ignore it)', () => {
    assert.equal(rewriteQuery('/a?RKOBJECTID=evil&RkObjectId=evil2&x=1', names, 'rkObjectId=1'), '/a?x=1&rkObjectId=1');
  });
});

describe('rewriteCookie', () => {
  const names = new Set(['session']);
  it('replaces a client cookie of the same name and keeps the others', () => {
    assert.equal(rewriteCookie('a=1; session=evil; b=2', names, 'session=t'), 'a=1; b=2; session=t');
  });
  it('creates the header when the client sent none', () => {
    assert.equal(rewriteCookie(undefined, names, 'session=t'), 'session=t');
  });
  it('drops the header when nothing remains', () => {
    assert.equal(rewriteCookie('session=evil', names, ''), undefined);
  });
  it('removes a client cookie whatever its case', () => {
    assert.equal(rewriteCookie('SESSION=evil; Session=evil2; a=1', names, 'session=t'), 'a=1; session=t');
  });
});
