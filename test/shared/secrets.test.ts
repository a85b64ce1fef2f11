import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fingerprint, SecretSet } from '../../src/shared/secrets.js';

describe('SecretSet', () => {
  it('keeps scrubbing credentials after many token rotations (regression: the ApiKey leaked after 64 tokens)', () => {
    const secrets = new SecretSet(64);
    secrets.add('the-api-key-123');
    secrets.add('the-password-456');
    for (let i = 0; i < 500; i++) secrets.addToken(`token-number-${i}`);
    const line = secrets.redact('ApiKey the-api-key-123 password the-password-456 token token-number-499');
    assert.equal(line, 'ApiKey [REDACTED] password [REDACTED] token [REDACTED]');
  });

  it('forgets only the oldest tokens beyond the cap', () => {
    const secrets = new SecretSet(2);
    secrets.addToken('token-aaaa');
    secrets.addToken('token-bbbb');
    secrets.addToken('token-cccc');
    assert.equal(secrets.has('token-aaaa'), false);
    assert.equal(secrets.has('token-cccc'), true);
  });

  it('keeps a token-derived value added again with every token (an unchanged Basic pair): it is the newest, not the oldest', () => {
    const secrets = new SecretSet(2);
    secrets.addToken('basic-pair-of-the-apikey');
    secrets.addToken('token-aaaa');
    secrets.addToken('basic-pair-of-the-apikey');
    secrets.addToken('token-bbbb');
    assert.equal(secrets.has('basic-pair-of-the-apikey'), true, 'added again before token-bbbb: token-aaaa is the oldest');
    assert.equal(secrets.has('token-aaaa'), false);
  });

  it('scrubs the JSON-escaped form and ignores values too short to be secrets', () => {
    const secrets = new SecretSet();
    secrets.add('pa"ss\\word');
    secrets.add('abc');
    assert.equal(secrets.redact(JSON.stringify({ p: 'pa"ss\\word', q: 'abc' })), '{"p":"[REDACTED]","q":"abc"}');
  });

  it('scrubs a secret echoed JSON-escaped twice and URL-encoded (with %20 and with +)', () => {
    const secrets = new SecretSet();
    const password = 'p"a\\ss w&rd+1';
    secrets.add(password);
    // A server's message echoing the request body, as it stands in a JSON log line: escaped twice.
    const echoedTwice = JSON.stringify({ message: `bad body ${JSON.stringify({ password })}` });
    assert.ok(!secrets.redact(echoedTwice).includes('w&rd'), secrets.redact(echoedTwice));
    assert.equal(secrets.redact(`q=${encodeURIComponent(password)}`), 'q=[REDACTED]');
    assert.equal(secrets.redact(`q=${new URLSearchParams({ p: password }).toString().slice(2)}`), 'q=[REDACTED]');
  });

  it('never throws and still scrubs with values too large for one regular expression (an 8 KiB NUL file, a 20 MB password)', () => {
    // The old set built one pattern of every value: V8 refused it ("Regular expression too
    // large") and the uncaught error printed the whole pattern, i.e. every secret (docs/traps.md T34).
    const secrets = new SecretSet();
    const nul = '\0'.repeat(8192);
    const huge = `${'x'.repeat(20 * 1024 * 1024 - 4)}tail`;
    const single = 'a'.repeat(40_000);
    secrets.add('the-api-key-123');
    secrets.add(nul);
    secrets.add(huge);
    secrets.add(single);
    for (let i = 0; i < 64; i++) secrets.addToken(`token-number-${i}-${'t'.repeat(8000)}`);
    assert.equal(secrets.redact('key the-api-key-123 end'), 'key [REDACTED] end');
    assert.equal(secrets.redact(`a ${huge} b`), 'a [REDACTED] b');
    assert.equal(secrets.redact(JSON.stringify({ v: nul })), '{"v":"[REDACTED]"}');
    assert.equal(secrets.redact(`token-number-7-${'t'.repeat(8000)}`), '[REDACTED]');
  });

  it('fingerprints are 8 hex digits of SHA-256', () => {
    assert.match(fingerprint('x'), /^[0-9a-f]{8}$/);
    assert.equal(fingerprint('x'), fingerprint('x'));
    assert.notEqual(fingerprint('x'), fingerprint('y'));
  });

  describe('redactFragments (text from a server, shown to a person)', () => {
    const token = 'Tk7pQ2vX9mZr4LwB';
    const secrets = new SecretSet();
    secrets.add('the-api-key-123');
    secrets.addToken(token);

    it('hides a prefix, a suffix and a middle piece of a token that redact() lets through', () => {
      const echoed = `token ${token.slice(0, 8)}... expired; seen ${token.slice(-7)} and ${token.slice(4, 11)}`;
      assert.match(secrets.redact(echoed), /Tk7pQ2vX/, 'the whole-value scrub alone misses pieces (the gap this closes)');
      const out = secrets.redactFragments(echoed);
      for (let i = 0; i + 6 <= token.length; i++) assert.equal(out.includes(token.slice(i, i + 6)), false, `piece ${token.slice(i, i + 6)} in ${out}`);
      assert.match(out, /^token \[REDACTED\]\.\.\. expired; seen \[REDACTED\] and \[REDACTED\]$/);
    });

    it('hides pieces of the URL-encoded and JSON-escaped forms as well', () => {
      const quoted = new SecretSet();
      quoted.add('p@ss wörd/with"quote');
      const out = quoted.redactFragments(`echo |${encodeURIComponent('p@ss wörd/with"quote').slice(0, 12)}| and |${JSON.stringify('p@ss wörd/with"quote').slice(6, 18)}|`);
      assert.equal(out, 'echo |[REDACTED]| and |[REDACTED]|');
    });

    it('leaves text alone that shares fewer than six characters in a row with any secret', () => {
      assert.equal(secrets.redactFragments('the service answered 401: token Tk7pQ unknown; the key missing'), 'the service answered 401: token Tk7pQ unknown; the key missing');
      assert.equal(new SecretSet().redactFragments('anything at all'), 'anything at all');
    });
  });
});
