import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { startUpstream } from '../helpers/upstream.js';
import { send, startSidecar, waitReady } from '../helpers/stack.js';

/**
 * Be liberal in what the vendor sends: a gentoken answer without `refreshToken` (a serialiser
 * that drops null fields, Jackson's NON_NULL) or with it null gives a token, and requests are
 * served; the field is never read (docs/design.md, "How the token flows").
 */
describe('a vendor whose AuthResult lacks refreshToken', () => {
  for (const refreshToken of ['absent', null] as const) {
    it(`refreshToken ${refreshToken === null ? 'null' : 'absent'}: the sidecar obtains a token and serves 200s`, async (t) => {
      const upstream = await startUpstream((req, res) => res.end('ok'), { refreshToken });
      t.after(() => upstream.close());
      const sidecar = await startSidecar({ baseUrl: upstream.url });
      t.after(() => sidecar.stop());
      await waitReady(sidecar);
      for (let i = 0; i < 3; i++) {
        const answer = await send(sidecar.port, { path: `/pub/b2b/v1/thing/${i}` });
        assert.equal(answer.status, 200, answer.body.toString());
      }
      assert.equal(upstream.tokenRequests, 1);
      assert.equal(sidecar.log.lines().filter((e) => /invalid response/.test(JSON.stringify(e))).length, 0);
    });
  }
});
