import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loggedPath } from '../../src/proxy/logged-path.js';
import { CREDENTIALS, send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';

describe('per-request access log (log.requests)', () => {
  it('logs method, path, route, status, duration and source, never a query value or a secret', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { log: { requests: true } } });
    try {
      await waitReady(s);
      await send(s.port, { path: '/pub/b2b/v1/echo?secret=query-value-123' });
      await new Promise((r) => setTimeout(r, 20));
      const line = s.log.lines().find((l) => l.message === 'request');
      assert.ok(line, 'an access log line');
      assert.equal(line.method, 'GET');
      assert.equal(line.route, 'service');
      assert.equal(line.status, 200);
      assert.equal(typeof line.durationMs, 'number');
      assert.equal(line.source, '127.0.0.1');
      assert.equal(line.path, '/pub/b2b/v1/echo?secret=***');
      const text = s.log.text();
      assert.equal(text.includes('query-value-123'), false);
      for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, s.sidecar.tokens!.current()!.value]) assert.equal(text.includes(secret), false);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });

  it('carries the path with every query value redacted: an attached query token and the client\'s own never show', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: {
      log: { requests: true },
      token: { attach: [{ in: 'query', name: 'access_token', value: '{token}' }, { in: 'header', name: 'ApiKey', value: '{apiKey}' }] },
    } });
    try {
      await waitReady(s);
      await send(s.port, { path: '/pub/b2b/v1/echo?access_token=client-own-token-987&page=2&flag' });
      await new Promise((r) => setTimeout(r, 20));
      const line = s.log.lines().find((l) => l.message === 'request');
      assert.ok(line, 'an access log line');
      // The runbook's step: which path failed, readable without any value.
      assert.equal(line.path, '/pub/b2b/v1/echo?access_token=***&page=***&***');
      const text = s.log.text();
      for (const secret of ['client-own-token-987', CREDENTIALS.apiKey, CREDENTIALS.password, s.sidecar.tokens!.current()!.value]) assert.equal(text.includes(secret), false, secret);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });

  it('masks a query item without `=` and every path parameter after `;` in a segment', () => {
    assert.equal(loggedPath('/a/b?SECRET'), '/a/b?***');
    assert.equal(loggedPath('/a/b?k=v&SECRET&&x='), '/a/b?k=***&***&&x=***');
    assert.equal(loggedPath('/app;jsessionid=ABC123/items;v=2;SECRET/last?q=1'), '/app;jsessionid=***/items;v=***;***/last?q=***');
    assert.equal(loggedPath('/a;/b'), '/a;/b');
    assert.equal(loggedPath('http://example.com/x;jsessionid=ABC123?T0K3N'), '/x;jsessionid=***?***');
    for (const shown of [loggedPath('/a/b?SECRET'), loggedPath('/app;jsessionid=ABC123/items;SECRET')]) assert.equal(/SECRET|ABC123/.test(shown), false, shown);
  });

  it('reduces an absolute-form target to its path (no user information) and cuts a long one', () => {
    assert.equal(loggedPath('http://user:hunter2@example.com/a/b?k=v#frag'), '/a/b?k=***');
    assert.equal(loggedPath('/x#y'), '/x');
    assert.equal(loggedPath('*'), '(not a path)');
    const long = loggedPath(`/${'a'.repeat(2000)}`);
    assert.equal(long.length, 513);
    assert.ok(long.endsWith('…'));
  });

  it('is off by default', async () => {
    const sim = await startSimulator();
    const s = await startSidecar({ baseUrl: sim.baseUrl });
    try {
      await waitReady(s);
      await send(s.port, { path: '/pub/b2b/v1/echo' });
      assert.equal(s.log.lines().some((l) => l.message === 'request'), false);
    } finally {
      await s.stop();
      await sim.stop();
    }
  });
});
