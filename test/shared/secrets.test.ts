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

  it('scrubs the JSON-escaped form and ignores values too short to be secrets', () => {
    const secrets = new SecretSet();
    secrets.add('pa"ss\\word');
    secrets.add('abc');
    assert.equal(secrets.redact(JSON.stringify({ p: 'pa"ss\\word', q: 'abc' })), '{"p":"[REDACTED]","q":"abc"}');
  });

  it('fingerprints are 8 hex digits of SHA-256', () => {
    assert.match(fingerprint('x'), /^[0-9a-f]{8}$/);
    assert.equal(fingerprint('x'), fingerprint('x'));
    assert.notEqual(fingerprint('x'), fingerprint('y'));
  });
});
