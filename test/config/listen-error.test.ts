import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ListenError } from '../../src/config/listen-error.js';

const errno = (code: string) => Object.assign(new Error(`${code}: something`), { code });

describe('ListenError', () => {
  it('a unix socket\'s EACCES speaks of the directory, never of ports below 1024', () => {
    const message = new ListenError('proxy', '/run/b2b/sidecar.sock', undefined, errno('EACCES')).message;
    assert.equal(message, 'listen.socket (B2B_LISTEN_SOCKET): the proxy listener cannot listen on the unix socket /run/b2b/sidecar.sock: permission denied (the user running the sidecar must be able to write the directory) [EACCES]');
    assert.doesNotMatch(message, /1024/);
  });

  it('a unix socket\'s EPERM names listen.socketGroup; a port\'s EACCES still names privileged ports', () => {
    assert.match(new ListenError('proxy', '/run/b2b/sidecar.sock', undefined, errno('EPERM')).message, /must be a member of listen\.socketGroup\) \[EPERM\]$/);
    assert.match(new ListenError('admin', '0.0.0.0', 80, errno('EACCES')).message, /^admin\.port \(B2B_ADMIN_PORT\): .*ports below 1024 need privileges/);
  });
});
