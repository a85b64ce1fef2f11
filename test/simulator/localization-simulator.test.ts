import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Agent, request } from 'undici';
import type { WeblateShape } from '../../src/simulator/localization-data.js';
import { createLocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { loadTrustedCas, trustContext } from '../../src/shared/tls.js';
import { testTls } from '../helpers/tls.js';

const TOKEN = 'wlu_sim7oken5e6f7a8b';

async function withSim(fn: (call: (method: string, path: string, headers?: Record<string, string>) => Promise<{ status: number; headers: Record<string, unknown>; body: string }>, url: string) => Promise<void>, token?: string, shape?: WeblateShape) {
  const tls = await testTls();
  const sim = createLocalizationSimulator({ tls, ...(token === undefined ? {} : { token }), ...(shape ? { shape } : {}) });
  const { url } = await sim.start();
  const agent = new Agent({ connect: { secureContext: trustContext(loadTrustedCas(tls.caFile)) } });
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
      assert.equal(res.headers['x-ratelimit-remaining'], '4999');
    });
  });

  it('answers in the current Weblate shape by default: source language on the component, VCS fields null, no links', async () => {
    await withSim(async (call) => {
      const t = JSON.parse((await call('GET', '/api/translations/demo/web/de/')).body);
      assert.equal(t.component.source_language.code, 'ru');
      assert.equal('source_language' in t.component.project, false);
      for (const field of ['vcs', 'repo', 'git_export', 'branch', 'filemask', 'push', 'repoweb']) assert.equal(t.component[field], null, field);
      for (const field of ['repository_url', 'file_url', 'statistics_url', 'changes_list_url', 'units_list_url']) assert.equal(field in t, false, field);
      assert.equal(t.last_change, '2025-10-29T10:41:05.004117+01:00');
      const fr = JSON.parse((await call('GET', '/api/translations/demo/emails/fr/')).body);
      assert.equal(fr.component.license_url, null);
      assert.equal(fr.last_change, null);
    });
  });

  it('answers in the legacy shape (Weblate <= 4.2, the seed) on request', async () => {
    await withSim(async (call) => {
      const t = JSON.parse((await call('GET', '/api/translations/demo/web/de/')).body);
      assert.equal(t.component.project.source_language.code, 'ru');
      assert.equal('source_language' in t.component, false);
      assert.equal(t.component.vcs, 'git');
      assert.match(t.units_list_url, /\/units\/$/);
      assert.equal(t.last_change, '2025-10-29T09:41:05.004117');
      assert.equal((await call('GET', '/api/translations/demo/docs%252Fguide/en/')).status, 404, 'no categories before 5.0');
    }, undefined, 'legacy');
  });

  it('serves a component inside a category as docs%252Fguide, and 404 for a bare %2F (decoded to / before routing)', async () => {
    await withSim(async (call, url) => {
      const res = await call('GET', '/api/translations/demo/docs%252Fguide/en/');
      assert.equal(res.status, 200);
      const t = JSON.parse(res.body);
      assert.equal(t.component.slug, 'guide');
      assert.equal(t.url, `${url}/api/translations/demo/docs%252Fguide/en/`);
      assert.equal(t.total, 0);
      assert.equal(t.translated_percent, 100);
      assert.equal((await call('GET', '/api/translations/demo/docs%2Fguide/en/')).status, 404);
    });
  });

  it('redirects a translation URL without its trailing slash with 301 to an absolute path, like Django', async () => {
    await withSim(async (call) => {
      const res = await call('GET', '/api/translations/demo/web/en?format=json');
      assert.equal(res.status, 301);
      assert.equal(res.headers.location, '/api/translations/demo/web/en/?format=json');
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
      for (const path of ['/api/translations/demo/web/xx/', '/api/users/', '/api/translations/demo/web/en/x/']) {
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
