import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { shellWord } from '../../src/shared/shell-word.js';
import { AnswerSignals } from '../../src/token/answers/answer-signals.js';
import { captureLogger } from '../helpers/gentoken-server.js';

describe('a client-chosen path in a command line printed for the operator', () => {
  const hostile = [
    "/pub/b2b/v1/objects/x;$(touch${IFS}/tmp/pwn)",
    '/objects/`id`|cat',
    "/objects/it's&more",
    '/a b',
    '',
  ];

  it('is one word to a real shell (bash and dash read back exactly the value, nothing runs)', () => {
    for (const sh of ['bash', 'sh']) {
      for (const value of hostile) {
        const out = execFileSync(sh, ['-c', `printf '%s' ${shellWord(value)}`], { encoding: 'utf8' });
        assert.equal(out, value, `${sh}: ${shellWord(value)}`);
      }
    }
  });

  it('stays bare when nothing in it is special', () => {
    assert.equal(shellWord('/pub/b2b/v1/objects/obj-42'), '/pub/b2b/v1/objects/obj-42');
    assert.equal(shellWord('/etc/b2b-sidecar/sidecar.yaml'), '/etc/b2b-sidecar/sidecar.yaml');
  });

  it('is quoted in the attach-suspect log line and /readyz warning', () => {
    const log = captureLogger();
    const signals = new AnswerSignals(log.logger, '/etc/b2b sidecar/sidecar.yaml');
    const path = "/pub/b2b/v1/objects/x;$(touch${IFS}/tmp/pwn)";
    signals.suspectEntered('answers', path, { answers: 10, lastStatus: 404 }, undefined);
    assert.match(log.lines.join('\n'), /--config '\/etc\/b2b sidecar\/sidecar\.yaml' --probe '\/pub\/b2b\/v1\/objects\/x;\$\(touch\$\{IFS\}\/tmp\/pwn\)' --discover-attach --own-token/);
    assert.match(signals.suspectWarning('unauthorized', path), /--probe '\/pub\/b2b\/v1\/objects\/x;\$\(touch\$\{IFS\}\/tmp\/pwn\)' --discover-attach --own-token/);
  });
});
