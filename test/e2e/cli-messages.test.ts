import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runCli } from '../helpers/cli.js';

/** Issue 13 §6, through the built CLI (`npm run build` first). */
describe('command-line messages', () => {
  for (const [args, flag, reason] of [
    [['demo', '--ttl', '1.5'], '--ttl <seconds>', /whole number of seconds/],
    [['simulate', '--ttl', '0'], '--ttl <seconds>', /whole number of seconds/],
    [['simulate', '--latency-ms', 'abc'], '--latency-ms <ms>', /number of milliseconds/],
    [['demo', '--port', '70000'], '--port <n>', /port number 0-65535/],
  ] as const) {
    it(`${args.join(' ')} exits 2 naming ${flag}`, async () => {
      const { code, stderr } = await runCli([...args]);
      assert.equal(code, 2);
      const first = stderr.split('\n')[0]!;
      assert.ok(first.startsWith(`error: option '${flag}' argument '${args[2]}' is invalid.`), first);
      assert.match(first, reason);
    });
  }

  it('run warns about an unknown B2B_* variable, naming the closest known one, and not its value', async () => {
    const { code, stderr } = await runCli(['run'], { B2B_BASE_URL: 'https://api.example.com', B2B_API_KEY: 'k-1234', B2B_PASWORD: 'typo-secret-77' });
    assert.equal(code, 2);
    assert.match(stderr, /^invalid configuration:\n {2}- credentials\.password \(B2B_PASSWORD\): missing credential/);
    assert.match(stderr, /\nwarning: environment variable B2B_PASWORD is not a setting and is ignored \(did you mean B2B_PASSWORD\?\)\n/);
    assert.ok(!stderr.includes('typo-secret-77'));
  });
});
