import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { unknownEnvWarnings } from '../../src/config/env-warnings.js';
import { inspectorRefusal, runtimeWarnings } from '../../src/config/runtime-risks.js';

describe('runtime settings that would hand out the credentials (docs/security.md, "The process")', () => {
  it('refuses the inspector from NODE_OPTIONS or node\'s own options, in each spelling that opens it', () => {
    for (const option of ['--inspect', '--inspect=0.0.0.0:9229', '--inspect-brk', '--inspect-wait=127.0.0.1:0']) {
      assert.match(inspectorRefusal({ NODE_OPTIONS: `--max-semi-space-size=4 ${option}` }, []) ?? '', new RegExp(`Node's inspector is enabled \\(${option.replace(/[.]/g, '\\.')}\\)`), option);
      assert.ok(inspectorRefusal({}, [option]), `${option} on node's command line`);
    }
  });

  it('lets options that open nothing pass: --inspect-port alone (the test runner passes it to every child), --max-semi-space-size, --disable-sigusr1', () => {
    assert.equal(inspectorRefusal({ NODE_OPTIONS: '--max-semi-space-size=4 --disable-sigusr1' }, ['--inspect-port=127.0.0.1:9229']), undefined);
    assert.equal(inspectorRefusal({}, []), undefined);
  });

  it('B2B_ALLOW_INSPECTOR=true starts anyway, with a warning instead; it is a known variable', () => {
    const env = { NODE_OPTIONS: '--inspect', B2B_ALLOW_INSPECTOR: 'true' };
    assert.equal(inspectorRefusal(env, []), undefined);
    assert.deepEqual(runtimeWarnings(env, []), ['Node\'s inspector is enabled (--inspect) and B2B_ALLOW_INSPECTOR=true: anyone who can reach its port can read the credentials']);
    assert.deepEqual(unknownEnvWarnings(env), []);
  });

  it('warns about NODE_DEBUG sections that print headers, naming them; not about others', () => {
    for (const value of ['http', 'HTTP', 'net,tls', 'undici', 'fetch', 'http2', '*', 'module,http']) {
      const [warning] = runtimeWarnings({ NODE_DEBUG: value }, []);
      assert.match(warning ?? '', new RegExp(`^NODE_DEBUG=${value.replace('*', '\\*')} makes Node print request headers, the ApiKey and the token among them, on stderr`), value);
    }
    assert.deepEqual(runtimeWarnings({ NODE_DEBUG: 'module,esm' }, []), []);
    assert.deepEqual(runtimeWarnings({}, []), []);
  });

  it('warns about DEBUG patterns that turn on the Redis client\'s command log, naming them; not about others (T86)', () => {
    for (const value of ['ioredis:*', 'ioredis:redis', '*', 'ioredis*', 'express:*,ioredis:*', '*,-express:*']) {
      const [warning] = runtimeWarnings({ DEBUG: value }, []);
      assert.match(warning ?? '', new RegExp(`^DEBUG=${value.replace(/[*]/g, '\\*')} makes the Redis client of the fleet store print every command with its arguments, the Redis password and the shared token among them, on stderr`), value);
    }
    for (const value of ['express:*', '-ioredis:*', '*,-ioredis:*', 'ioredis:cluster', 'io']) assert.deepEqual(runtimeWarnings({ DEBUG: value }, []), [], value);
  });
});
