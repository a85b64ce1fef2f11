import assert from 'node:assert/strict';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { describe, it } from 'node:test';
import { validateConfig } from '../../src/config/validate-config.js';
import { ConfigError } from '../../src/shared/errors.js';

/** Problems of a config whose token.attach is `attach`, or [] when valid. */
function attachProblems(attach: unknown[], rkObjectId?: string): string[] {
  try {
    validateConfig({ service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'key-1234', password: 'pw-5678', rkObjectId }, token: { attach } });
    return [];
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems;
  }
}

const accepted = (fn: () => void) => {
  try {
    fn();
    return true;
  } catch {
    return false;
  }
};

/**
 * Header names and values from Node's own test of its HTTP header rules:
 * nodejs/node test/parallel/test-http-invalidheaderfield2.js (commit
 * 020b941e2e605e661cc9dc6dc5be691aa3dfe8a3). Each is also checked against the running Node's
 * validateHeaderName/validateHeaderValue, the check that makes a proxied request fail.
 */
const GOOD_NAMES = ['TCN', 'ETag', 'date', 'alt-svc', 'Content-Type', '0', 'Set-Cookie2', 'Set_Cookie', 'foo`bar^', 'foo|bar', '~foobar', 'FooBar!', '#Foo', '$et-Cookie', '%%Test%%', 'Test&123', 'It\'s_fun', '2*3', '4+2', '3.14159265359'];
const BAD_NAMES = [':', '@@', '中文呢', '((((())))', ':alternate-protocol', 'alternate-protocol:', 'foo\nbar', 'foo\rbar', 'foo\r\nbar', 'foo\x00bar', '\x7FMe!', '{Start', '(Start', '[Start', 'End}', 'End)', 'End]', '"Quote"', 'This,That'];
const GOOD_VALUES = ['foo bar', 'foo\tbar', '0123456789ABCdef', '!@#$%^&*()-_=+\\;\':"[]<>,./?|~`'];
const BAD_VALUES = ['foo\rbar', 'foo\nbar', 'foo\r\nbar', '中文呢', '\x7FMe!', 'Testing 123\x00', 'foo\vbar', 'Ding!\x07'];

describe('token.attach header rules agree with Node\'s HTTP client', () => {
  const carrier = { in: 'header', name: 'Authorization', value: 'Bearer {token}' };
  for (const name of GOOD_NAMES) {
    it(`accepts the header name ${JSON.stringify(name)}`, () => {
      assert.ok(accepted(() => validateHeaderName(name)), 'Node refuses it: the test data is wrong');
      assert.deepEqual(attachProblems([carrier, { in: 'header', name, value: 'x' }]), []);
    });
  }
  for (const name of BAD_NAMES) {
    it(`refuses the header name ${JSON.stringify(name)}, naming the key`, () => {
      assert.ok(!accepted(() => validateHeaderName(name)), 'Node accepts it: the test data is wrong');
      const problems = attachProblems([carrier, { in: 'header', name, value: 'x' }]);
      assert.ok(problems.some((p) => p.startsWith('token.attach[1].name: ')), problems.join('\n'));
    });
  }
  // Values: `{}` are placeholder syntax in a template, so the good-values sample loses them. A tab
  // is legal in HTTP but refused on purpose in a credential template (pasted, never meant).
  for (const value of GOOD_VALUES) {
    it(`accepts the header value ${JSON.stringify(value)}${value.includes('\t') ? ' except its tab' : ''}`, () => {
      assert.ok(accepted(() => validateHeaderValue('x', value)));
      const problems = attachProblems([{ in: 'header', name: 'X-Token', value: `${value} {token}` }]);
      assert.deepEqual(problems, value.includes('\t') ? ['token.attach[0].value: must not contain control characters (CR, LF, ...)'] : []);
    });
  }
  for (const value of BAD_VALUES) {
    it(`refuses the header value ${JSON.stringify(value)}, naming the key`, () => {
      assert.ok(!accepted(() => validateHeaderValue('x', value)));
      const problems = attachProblems([{ in: 'header', name: 'X-Token', value: `${value} {token}` }]);
      assert.ok(problems.some((p) => p.startsWith('token.attach[0].value: ')), problems.join('\n'));
    });
  }

  it('refuses what a mail client pastes: “Bearer {token}”, with a hint about typographic quotes', () => {
    assert.ok(!accepted(() => validateHeaderValue('authorization', '“Bearer abc”')));
    const problems = attachProblems([{ in: 'header', name: 'Authorization', value: '“Bearer {token}”' }]);
    assert.deepEqual(problems, ['token.attach[0].value: contains “ (U+201C) at character 1, which an HTTP header cannot carry (a typographic quote: leave the value unquoted or use plain " in YAML)']);
  });

  it('accepts obs-text (0x80-0xFF) as Node does, and refuses what lies beyond it', () => {
    assert.ok(accepted(() => validateHeaderValue('x', 'caf\u00e9')));
    assert.deepEqual(attachProblems([{ in: 'header', name: 'X-Token', value: 'caf\u00e9 {token}' }]), []);
    assert.ok(!accepted(() => validateHeaderValue('x', '\u0100')));
    assert.equal(attachProblems([{ in: 'header', name: 'X-Token', value: '\u0100{token}' }]).length, 1);
  });

  it('checks the substituted rkObjectId where it lands in a header, but not in a query (URL-encoded)', () => {
    const inHeader = attachProblems([carrier, { in: 'header', name: 'X-Object', value: '{rkObjectId}' }], 'объект');
    assert.equal(inHeader.length, 1);
    assert.match(inHeader[0]!, /^token\.attach\[1\]\.value: puts credentials\.rkObjectId \(B2B_RK_OBJECT_ID\) in a header/);
    assert.deepEqual(attachProblems([carrier, { in: 'query', name: 'obj', value: '{rkObjectId}' }], 'объект'), []);
  });
});

describe('token.attach must carry the token', () => {
  it('refuses an empty list', () => {
    assert.deepEqual(attachProblems([]), ['token.attach: is empty: nothing would carry the token to the service; leave it out for the default']);
  });
  it('refuses a list in which no entry has {token}', () => {
    assert.deepEqual(attachProblems([{ in: 'header', name: 'ApiKey', value: '{apiKey}' }]), ['token.attach: no entry has {token} in its value: the service would never see the token']);
  });
  it('refuses an empty value', () => {
    assert.deepEqual(attachProblems([{ in: 'header', name: 'Authorization', value: 'Bearer {token}' }, { in: 'query', name: 'x', value: '' }]), ['token.attach[1].value: is empty: the entry would send nothing']);
  });
  it('refuses ${token} with "did you mean {token}?", and it does not count as carrying the token', () => {
    assert.deepEqual(attachProblems([{ in: 'header', name: 'Authorization', value: 'Bearer ${token}' }]), [
      'token.attach[0].value: ${token} is shell syntax and would be sent literally: did you mean {token}?',
      'token.attach: no entry has {token} in its value: the service would never see the token',
    ]);
  });
  it('accepts the token in a cookie or a query parameter', () => {
    assert.deepEqual(attachProblems([{ in: 'cookie', name: 'sid', value: '{token}' }]), []);
    assert.deepEqual(attachProblems([{ in: 'query', name: 'token', value: '{token}' }]), []);
  });
});
