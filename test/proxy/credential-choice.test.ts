import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import { describe, it } from 'node:test';
import { DEFAULT_ATTACH } from '../../src/config/schema.js';
import { byLongestPrefix, indexRoutes, pickRoute } from '../../src/proxy/admit.js';
import { compileAttachments } from '../../src/proxy/attach.js';
import { chooseCredential, NO_SET_CHOSEN, type CredentialChoice } from '../../src/proxy/credential-choice.js';
import { outgoingHeaders } from '../../src/proxy/forward.js';
import type { ProxyRoute } from '../../src/proxy/proxy-route.js';
import { strippedNames } from '../../src/proxy/stripped-names.js';
import { compileIpGuard } from '../../src/shared/ip-guard.js';

/** Which credential set a request uses (src/proxy/credential-choice.ts, docs/credential-sets.md). */
const attachments = compileAttachments(DEFAULT_ATTACH);
const route = (name: 'service' | 'localization', prefix: string, credential?: string): ProxyRoute => ({
  name, prefix, engine: {} as ProxyRoute['engine'],
  credentials: { current: () => undefined, acquire: () => Promise.reject(new Error('none')) },
  ...(credential ? { credential } : {}),
  ...strippedNames(attachments, ['authorization']),
});
const a = route('service', '', 'a');
const b = route('service', '/objects-b', 'b');
const bRoot = route('service', '', 'b');
const c = route('service', '', 'c');
const l10n = route('localization', '/l10n');
const placeholder = route('service', '');

function req(headers: Record<string, string | string[]>, remoteAddress = '127.0.0.1'): IncomingMessage {
  return { headers, socket: { remoteAddress } } as unknown as IncomingMessage;
}

const sets = new Map([
  ['a', { route: a }],
  ['b', { route: bRoot }],
  ['c', { route: c, headerAllow: compileIpGuard(['127.0.0.1/32']) }],
]);
const shared: CredentialChoice = { sets, unchosen: placeholder };
const withDefault: CredentialChoice = { sets, unchosen: a };
const ownListener: CredentialChoice = { sets };

describe('chooseCredential', () => {
  it('without the header: the route found, or 400 naming how to choose where there is no default (never another set as a fallback)', () => {
    assert.equal(chooseCredential(shared, b, req({})), b);
    assert.deepEqual(chooseCredential(shared, placeholder, req({})), { status: 400, message: NO_SET_CHOSEN });
    assert.equal(chooseCredential(withDefault, a, req({})), a);
  });

  it('the header chooses a set from a source in its headerAllow, else 403; it may only agree with a listener or prefix', () => {
    assert.equal(chooseCredential(shared, placeholder, req({ 'b2b-credential': 'c' })), c);
    assert.equal(chooseCredential(withDefault, a, req({ 'b2b-credential': ' c ' })), c);
    assert.deepEqual(chooseCredential(shared, placeholder, req({ 'b2b-credential': 'c' }, '10.0.0.9')), { status: 403, message: 'this source may not choose the credential set c (its headerAllow)' });
    assert.deepEqual(chooseCredential(shared, placeholder, req({ 'b2b-credential': 'a' })), { status: 403, message: 'this source may not choose the credential set a (its headerAllow)' });
    assert.equal(chooseCredential(shared, b, req({ 'b2b-credential': 'b' })), b);
    assert.match((chooseCredential(shared, b, req({ 'b2b-credential': 'c' })) as { message: string }).message, /path prefix serves the credential set b/);
    assert.equal(chooseCredential(ownListener, a, req({ 'b2b-credential': 'a' })), a);
    assert.match((chooseCredential(ownListener, a, req({ 'b2b-credential': 'c' })) as { message: string }).message, /listener serves the credential set a/);
    // A route of another upstream ignores it (it is stripped there too).
    assert.equal(chooseCredential(shared, l10n, req({ 'b2b-credential': 'c' })), l10n);
  });

  it('400 for two headers (Node joins them with a comma), an unknown id, and a value that is no id (not echoed)', () => {
    assert.equal((chooseCredential(shared, placeholder, req({ 'b2b-credential': 'c, c' })) as { status: number }).status, 400);
    assert.deepEqual(chooseCredential(shared, placeholder, req({ 'b2b-credential': 'zz' })), { status: 400, message: 'B2B-Credential names no credential set: "zz"' });
    assert.deepEqual(chooseCredential(shared, placeholder, req({ 'b2b-credential': '<script>' })), { status: 400, message: 'B2B-Credential is not a credential set id' });
  });
});

describe('B2B-Credential is stripped (docs/traps.md T74)', () => {
  it('on every route, the service\'s and the localization server\'s, also where nothing reads it', () => {
    for (const r of [a, b, l10n]) {
      const out = outgoingHeaders(req({ 'b2b-credential': 'c', accept: 'application/json' }), r, { prepared: attachments.prepare({ token: 't0k3n', apiKey: 'k' }), generation: 1 });
      assert.equal(out['b2b-credential'], undefined, r.name);
      assert.equal(out.accept, 'application/json');
    }
  });
});

describe('indexRoutes (many credential sets\' prefixes)', () => {
  it('answers as pickRoute does, by one lookup of the first segment', () => {
    const many = [
      ...Array.from({ length: 40 }, (_, i) => route('service', `/objects-${i}`, `s${i}`)),
      route('service', '/objects-1/deep', 'deep'), route('service', '/a/b', 'ab'), l10n, placeholder,
    ];
    const sorted = byLongestPrefix(many);
    const indexed = indexRoutes(many);
    const urls = ['/', '/objects-1', '/objects-1/', '/objects-1?x', '/objects-1/deep', '/objects-1/deeper', '/objects-1/deep/x', '/objects-12/x', '/objects-123/x',
      '/objects-', '/l10n/api', '/l10nx', '/a/b/c', '/a/bc', '/a', 'http://h/objects-1/x', '*', '/pub/b2b/v1/x', '/objects-39/x?y=1'];
    for (const url of urls) assert.equal(indexed(url), pickRoute(sorted, url), url);
    assert.equal(indexed('/objects-1/deep/x').credential, 'deep');
    assert.equal(indexed('/pub/b2b/v1/x'), placeholder);
  });
});
