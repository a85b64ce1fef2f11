import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ENGINES, send, startSidecar, waitReady } from '../helpers/stack.js';
import { startUpstream } from '../helpers/upstream.js';

/** The service echoing the request back: the token an `in: query` attachment carries must not reach the client. */
for (const engine of ENGINES) {
  describe(`credentials echoed by the service (engine ${engine})`, () => {
    it('removes the route\'s query attachment from a Location that keeps the query (trailing-slash redirect) and from Content-Location', async (t) => {
      const up = await startUpstream((req, res) => {
        const url = req.url ?? '/';
        if (!url.startsWith('/pub/b2b/v1/objects/1/')) {
          // Django APPEND_SLASH and many frameworks keep the whole query on this redirect.
          const q = url.indexOf('?');
          res.writeHead(301, { location: `https://service.example${url.slice(0, q)}/${url.slice(q)}#frag` });
          res.end();
          return;
        }
        res.writeHead(200, { 'content-location': url, 'content-type': 'application/json' });
        res.end('{}');
      });
      t.after(() => up.close());
      const s = await startSidecar({ baseUrl: up.url, engine, overrides: { token: { attach: [{ in: 'query', name: 'access_token', value: '{token}' }] } } });
      t.after(() => s.stop());
      await waitReady(s);
      const redirect = await send(s.port, { path: '/pub/b2b/v1/objects/1?view=full&ACCESS_TOKEN=client-sent' });
      assert.equal(redirect.status, 301);
      const token = s.sidecar.tokens!.current()!.value;
      assert.ok(up.seen[0]!.url.includes(`access_token=${token}`), 'the service got the token');
      assert.ok(!up.seen[0]!.url.includes('client-sent'), 'a client-sent parameter of any case is replaced');
      assert.equal(redirect.headers.location, 'https://service.example/pub/b2b/v1/objects/1/?view=full#frag');
      const direct = await send(s.port, { path: '/pub/b2b/v1/objects/1/?view=full' });
      assert.equal(direct.status, 200);
      assert.equal(direct.headers['content-location'], '/pub/b2b/v1/objects/1/?view=full');
    });

    it('refuses X-HTTP-Method-Override: TRACE like TRACE (a service honouring it would reflect the credentials)', async (t) => {
      const up = await startUpstream((_req, res) => res.end('{}'));
      t.after(() => up.close());
      const s = await startSidecar({ baseUrl: up.url, engine });
      t.after(() => s.stop());
      await waitReady(s);
      for (const name of ['X-HTTP-Method-Override', 'X-HTTP-Method', 'X-Method-Override']) {
        const res = await send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', headers: { [name]: 'trace', 'content-length': '0' } });
        assert.equal(res.status, 501, name);
      }
      const put = await send(s.port, { method: 'POST', path: '/pub/b2b/v1/echo', headers: { 'X-HTTP-Method-Override': 'PUT', 'content-length': '0' } });
      assert.equal(put.status, 200, 'other overrides pass: legacy clients use them');
      assert.equal(up.seen.length, 1);
    });
  });
}
