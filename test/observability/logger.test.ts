import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isSensitiveKey } from '../../src/observability/logger.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';

const SECRET = 'pw-7f3a9c1e-not-a-word';

describe('createLogger', () => {
  it('writes one JSON object per line with level, message, ISO time and the fields', () => {
    const { logger, lines, text } = createCaptureLogger();
    logger.info('token obtained', { fingerprint: 'ab12cd34', ttl: 900 });
    logger.warn('second');
    assert.equal(text().split('\n').filter(Boolean).length, 2);
    const [first, second] = lines();
    assert.deepEqual(Object.keys(first!).slice(0, 3), ['level', 'message', 'time']);
    assert.equal(first!.level, 'info');
    assert.equal(first!.message, 'token obtained');
    assert.equal(first!.fingerprint, 'ab12cd34');
    assert.equal(first!.ttl, 900);
    assert.equal(new Date(first!.time as string).toISOString(), first!.time);
    assert.equal(second!.level, 'warn');
  });

  it('drops lines below the configured level', () => {
    const { logger, lines } = createCaptureLogger({ level: 'warn' });
    logger.debug('d');
    logger.info('i');
    logger.warn('w');
    logger.error('e');
    assert.deepEqual(lines().map((l) => l.level), ['warn', 'error']);
  });

  it('redacts sensitive keys at any depth, whatever their case and spelling', () => {
    const { logger, lines } = createCaptureLogger();
    logger.info('request', {
      Authorization: 'Bearer abc',
      headers: { cookie: 'sid=1', 'Set-Cookie': ['a=b'], 'proxy-authorization': 'Basic x', accept: 'json' },
      deep: [{ creds: { api_key: 'k', ApiKey: 'k2', password: 'p', refreshToken: 'r', token: { v: 1 } } }],
    });
    const line = lines()[0]!;
    assert.equal(line.Authorization, '[REDACTED]');
    assert.deepEqual(line.headers, {
      cookie: '[REDACTED]', 'Set-Cookie': '[REDACTED]', 'proxy-authorization': '[REDACTED]', accept: 'json',
    });
    assert.deepEqual(line.deep, [{ creds: {
      api_key: '[REDACTED]', ApiKey: '[REDACTED]', password: '[REDACTED]', refreshToken: '[REDACTED]', token: '[REDACTED]',
    } }]);
  });

  it('keeps ordinary keys that merely contain a sensitive word', () => {
    assert.equal(isSensitiveKey('tokenFile'), false);
    assert.equal(isSensitiveKey('fingerprint'), false);
    assert.equal(isSensitiveKey('X-API-Key'), true);
    assert.equal(isSensitiveKey('refresh_token'), true);
  });

  it('never throws: a field that fails to serialise becomes a line saying one was lost, with nothing from it', () => {
    const { logger, lines, secrets } = createCaptureLogger();
    secrets.add(SECRET);
    const hostile = { toJSON() { throw new Error(`cannot serialise ${SECRET}`); } };
    assert.doesNotThrow(() => logger.error('about to fail', { hostile }));
    const [line] = lines();
    assert.equal(line!.message, 'a log line could not be written');
    assert.equal(line!.level, 'error');
    assert.ok(!JSON.stringify(line).includes(SECRET));
  });

  it('keeps logging once a secret too large for a regular expression is registered (an 8 KiB NUL password)', () => {
    const { logger, lines, secrets } = createCaptureLogger();
    secrets.add('\0'.repeat(8192));
    secrets.add(SECRET);
    assert.doesNotThrow(() => logger.warn(`echo ${SECRET}`));
    assert.equal(lines()[0]!.message, 'echo [REDACTED]');
  });

  it('does not mutate the caller\'s objects (docs/traps.md T27)', () => {
    const { logger, lines } = createCaptureLogger();
    const headers = { authorization: 'x', accept: 'json' };
    const top = { authorization: 'x', nested: { password: 'y' } };
    const snapshot = structuredClone({ headers, top });
    logger.info('outgoing', { headers });
    logger.info('top-level', top);
    logger.info('splat %O', headers);
    assert.deepEqual({ headers, top }, snapshot);
    assert.equal(headers.authorization, 'x');
    assert.equal(lines()[1]!.authorization, '[REDACTED]');
  });

  it('scrubs a known secret from the message, the fields and a splat argument', () => {
    const { logger, secrets, lines, text } = createCaptureLogger();
    secrets.add(SECRET);
    logger.info(`password is ${SECRET}`);
    logger.info('dump %O', { note: `prefix-${SECRET}-suffix` });
    logger.info('field', { harmless: { inner: SECRET }, quoted: `"${SECRET}"` });
    logger.info('%s and %s', 'x', SECRET);
    assert.equal(text().includes(SECRET), false);
    assert.equal(lines()[0]!.message, 'password is [REDACTED]');
    assert.match(lines()[1]!.message as string, /prefix-\[REDACTED\]-suffix/);
  });

  it('logs an Error with its stack and scrubs secrets from the stack', () => {
    const { logger, secrets, lines, text } = createCaptureLogger();
    secrets.add(SECRET);
    logger.error(new Error(`gentoken failed for ${SECRET}`));
    logger.error('wrapped', { err: new Error('outer', { cause: new Error(`inner ${SECRET}`) }) });
    assert.equal(text().includes(SECRET), false);
    const [plain, nested] = lines() as Array<Record<string, any>>;
    assert.equal(plain!.message, 'gentoken failed for [REDACTED]');
    assert.match(plain!.stack, /^Error: gentoken failed for \[REDACTED\]\n\s+at /);
    assert.equal(nested!.err.message, 'outer');
    assert.match(nested!.err.stack, /\n\s+at /);
    assert.equal(nested!.err.cause.message, 'inner [REDACTED]');
  });

  it('survives cycles, bigints and undefined values', () => {
    const { logger, lines } = createCaptureLogger();
    const a: Record<string, unknown> = { n: 1n, u: undefined };
    a.self = a;
    logger.info('odd', { a });
    assert.deepEqual(lines()[0]!.a, { n: '1', self: '[Circular]' });
  });
});

describe('createLogger, the cases winston handled its own way', () => {
  it('keeps a literal %% from pulling the fields into the message unredacted', () => {
    const { logger, lines } = createCaptureLogger();
    logger.info('50%%s done', { password: 'hunter2xx', ok: 1 });
    const line = lines()[0]!;
    assert.equal(line.message, '50%%s done');
    assert.equal(line.password, '[REDACTED]');
    assert.equal(line.ok, 1);
  });

  it('keeps the line\'s own level and time when an Error given as the message has such properties', () => {
    const { logger, lines } = createCaptureLogger();
    logger.error(Object.assign(new Error('boom'), { level: 'x', time: 'y', code: 'E_BOOM' }));
    const line = lines()[0]!;
    assert.equal(line.level, 'error');
    assert.notEqual(line.time, 'y');
    assert.equal(line.code, 'E_BOOM');
  });

  it('keeps an Error given after the message, and a field named message', () => {
    const { logger, lines } = createCaptureLogger();
    logger.error('request failed', new Error('socket hang up'));
    logger.warn('first', { message: 'second' });
    const [withError, withMessage] = lines() as Array<Record<string, any>>;
    assert.equal(withError!.message, 'request failed');
    assert.equal(withError!.err.message, 'socket hang up');
    assert.match(withError!.err.stack, /\n\s+at /);
    assert.equal(withMessage!.message, 'first second');
  });
});
