import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { compileAttachments } from '../../src/proxy/attach.js';
import { CREDENTIALS, ENGINES, send, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { startVendor, type Vendor } from '../helpers/vendors.js';
import { attachProblems } from '../helpers/attach-problems.js';

/**
 * The HTTP Basic attachment kind (`in: basic`, RFC 7617): `Authorization: Basic
 * base64(user:password)` from two templates. Its base64 is derived from the secrets without
 * holding them verbatim, so it is registered for redaction with every token (proxy/attach.ts,
 * `secrets`): the running sidecar's log never shows it.
 */
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('basic attachment: rendering', () => {
  const vars = { token: 'tok-123', apiKey: 'key-456', rkObjectId: 'obj 7' };

  it('renders Authorization: Basic base64(user:password) from any template in either field', () => {
    const compiled = compileAttachments([{ in: 'basic', user: '{apiKey}', password: '{token}' }]);
    const prepared = compiled.prepare(vars);
    assert.deepEqual(prepared.headers, [['authorization', basic('key-456', 'tok-123')]]);
    assert.deepEqual([...compiled.headerNames], ['authorization'], 'a client-sent Authorization is stripped');
    assert.deepEqual(prepared.secrets, [Buffer.from('key-456:tok-123').toString('base64')], 'the base64 is announced for redaction');
    const mixed = compileAttachments([{ in: 'basic', user: 'svc-{rkObjectId}', password: '{apiKey}/{token}' }]).prepare(vars);
    assert.deepEqual(mixed.headers, [['authorization', basic('svc-obj 7', 'key-456/tok-123')]]);
  });

  it('encodes the pair as UTF-8 (RFC 7617 charset)', () => {
    const prepared = compileAttachments([{ in: 'basic', user: 'Jürgen', password: '{token}' }]).prepare(vars);
    assert.deepEqual(prepared.headers, [['authorization', `Basic ${Buffer.from('Jürgen:tok-123', 'utf8').toString('base64')}`]]);
  });
});

describe('basic attachment: config checks', () => {
  const problemsOf = attachProblems;

  it('accepts {in: basic, user, password} and counts {token} in either field', () => {
    assert.deepEqual(problemsOf([{ in: 'basic', user: '{apiKey}', password: '{token}' }]), []);
    assert.deepEqual(problemsOf([{ in: 'basic', user: '{token}', password: '' }]), []);
    assert.deepEqual(problemsOf([{ in: 'basic', user: 'me', password: '{apiKey}' }]), ['token.attach: no entry has {token} in its value: the service would never see the token']);
  });

  it('needs user and password, and has no name or value', () => {
    assert.deepEqual(problemsOf([{ in: 'basic', password: '{token}' }]), ['token.attach[0].user: is required']);
    assert.deepEqual(problemsOf([{ in: 'basic', user: '{apiKey}', password: '{token}', name: 'Authorization', value: 'x' }]), [
      'token.attach[0].name: is not a field of a basic entry (it has user and password)',
      'token.attach[0].value: is not a field of a basic entry (it has user and password)',
    ]);
    assert.deepEqual(problemsOf([{ in: 'header', name: 'X-Token', value: '{token}', user: 'me' }]), [
      'token.attach[0].user: is not a field of a header entry (it has name and value)',
    ]);
  });

  it('checks both templates like a value, refuses a colon in the user, and a second Authorization', () => {
    assert.deepEqual(problemsOf([{ in: 'basic', user: 'a:b', password: '{token}' }]), ['token.attach[0].user: the user of a basic entry must not contain a colon (RFC 7617: the first one ends it)']);
    assert.deepEqual(problemsOf([{ in: 'basic', user: '{apiKey}', password: '{tokn}{token}' }]), ['token.attach[0].password: unknown placeholder {tokn} (known: {token}, {apiKey}, {rkObjectId})']);
    assert.deepEqual(problemsOf([{ in: 'basic', user: '{apiKey}', password: '{token}' }, { in: 'header', name: 'Authorization', value: 'Bearer {token}' }]), [
      'token.attach[1].name: duplicates token.attach[0] (header Authorization)',
    ]);
  });
});

for (const engine of ENGINES) {
  describe(`basic attachment through the sidecar (${engine})`, () => {
    let vendor: Vendor;
    let s: RunningSidecar;
    before(async () => {
      // Accepts only Basic base64(ApiKey:token) and echoes the Authorization it got in the body and a header.
      vendor = await startVendor((p) => {
        const got = p.header('Authorization') ?? '';
        const [user, token] = Buffer.from(got.replace(/^Basic /, ''), 'base64').toString().split(':');
        const ok = got.startsWith('Basic ') && user === CREDENTIALS.apiKey && p.issued(token);
        return { status: ok ? 502 : 401, headers: { 'X-Echo': got }, body: { message: `you sent ${got}` } };
      });
      s = await startSidecar({ baseUrl: vendor.url, engine, overrides: { token: { attach: [{ in: 'basic', user: '{apiKey}', password: '{token}' }] }, log: { requests: true } } });
      await waitReady(s);
    });
    after(async () => {
      await s.stop();
      await vendor.close();
    });

    it('sends Basic base64(ApiKey:token), never the client\'s Authorization, and logs no base64 of it', async () => {
      const answer = await send(s.port, { path: '/pub/b2b/v1/objects/1', headers: { authorization: basic('forged', 'client') } });
      assert.equal(answer.status, 502, 'the service accepted the pair (and answered 502 so the sidecar logs the exchange)');
      const token = vendor.tokens.at(-1)!;
      const pair = Buffer.from(`${CREDENTIALS.apiKey}:${token}`).toString('base64');
      const seen = vendor.requests.filter((r) => r.url.startsWith('/pub/b2b/v1/objects/')).map((r) => r.headers.authorization);
      assert.deepEqual(seen, [`Basic ${pair}`]);
      // Whatever path a log line takes, the base64 in it is scrubbed: it is a registered secret.
      s.log.logger.warn('service echoed %s and %O', `Basic ${pair}`, { authorization: pair });
      assert.equal(s.log.text().includes(pair), false, `the base64 reached a log line:\n${s.log.text()}`);
      assert.match(s.log.text(), /service echoed Basic \[REDACTED\]/);
    });
  });
}
