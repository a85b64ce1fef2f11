import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Agent, request } from 'undici';
import { createLocalizationSimulator } from '../src/simulator/localization-simulator.js';
import { loadTrustedCas } from '../src/tls.js';
import { testTls } from './helpers/tls.js';

const TOKEN = 'wlu_sim7oken5e6f7a8b';

async function withSim(fn: (call: (method: string, path: string, headers?: Record<string, string>) => Promise<{ status: number; headers: Record<string, unknown>; body: string }>, url: string) => Promise<void>, token?: string) {
  const tls = await testTls();
  const sim = createLocalizationSimulator(token === undefined ? { tls } : { tls, token });
  const { url } = await sim.start();
  const agent = new Agent({ connect: { ca: loadTrustedCas(tls.caFile) } });
  try {
    await fn(async (method, path, headers = {}) => {
      const res = await request(url + path, { method: method as 'GET', headers, dispatcher: agent });
      return { status: res.statusCode, headers: res.headers, body: await res.body.text() };
    }, url);
  } finally {
    await agent.close();
    await sim.stop();
  }
}

describe('localization simulator', () => {
  it('serves translations whose URLs point at the simulator itself', async () => {
    await withSim(async (call, url) => {
      const res = await call('GET', '/api/translations/demo/web/de/');
      assert.equal(res.status, 200);
      const t = JSON.parse(res.body);
      assert.equal(t.url, `${url}/api/translations/demo/web/de/`);
      assert.equal(t.component.project.source_language.code, 'ru');
      assert.equal(res.headers['x-ratelimit-remaining'], '4999');
    });
  });

  it('requires the token when one is set, answering 401 in Weblate\'s shape', async () => {
    await withSim(async (call) => {
      const missing = await call('GET', '/api/translations/demo/web/en/');
      assert.equal(missing.status, 401);
      assert.deepEqual(JSON.parse(missing.body), {
        type: 'client_error', errors: [{ code: 'not_authenticated', detail: 'Authentication credentials were not provided.', attr: null }],
      });
      assert.equal((await call('GET', '/api/translations/demo/web/en/', { authorization: `Token ${TOKEN}` })).status, 200);
    }, TOKEN);
  });

  it('answers 404 for unknown translations and other paths', async () => {
    await withSim(async (call) => {
      for (const path of ['/api/translations/demo/web/xx/', '/api/users/', '/api/translations/demo/web/en']) {
        const res = await call('GET', path);
        assert.equal(res.status, 404, path);
        assert.equal(JSON.parse(res.body).errors[0].code, 'not_found');
      }
    });
  });

  it('accepts ?format=api (browsable HTML) and ?format=json', async () => {
    await withSim(async (call) => {
      const html = await call('GET', '/api/translations/demo/web/en/?format=api');
      assert.equal(html.status, 200);
      assert.match(String(html.headers['content-type']), /^text\/html/);
      assert.match(html.body, /"language_code": "en"/);
      assert.equal((await call('GET', '/api/translations/demo/web/en/?format=json')).status, 200);
    });
  });

  it('is read-only: HEAD has no body, other methods get 405', async () => {
    await withSim(async (call) => {
      const head = await call('HEAD', '/api/translations/demo/web/en/');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      const post = await call('POST', '/api/translations/demo/web/en/');
      assert.equal(post.status, 405);
      assert.equal(post.headers.allow, 'GET, HEAD');
      assert.equal(JSON.parse(post.body).errors[0].code, 'method_not_allowed');
    });
  });
});
