import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createLocalizationSimulator, type LocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { CREDENTIALS, ENGINES, echoed, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

const L10N_TOKEN = 'wlu_localization_token_123456';

describe('localization route on the proxy listener', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  let l10n: LocalizationSimulator;
  let l10nUrl: string;
  let s: RunningSidecar;

  before(async () => {
    sim = await startSimulator();
    l10n = createLocalizationSimulator({ token: L10N_TOKEN, tls: await testTls() });
    ({ url: l10nUrl } = await l10n.start());
    s = await startSidecar({
      baseUrl: sim.baseUrl,
      overrides: { localization: { baseUrl: l10nUrl, caFile: (await testTls()).caFile, token: L10N_TOKEN, watch: ['demo/web/en'] } },
    });
    await waitReady(s);
  });
  after(async () => {
    await s.stop();
    await l10n.stop();
    await sim.stop();
  });

  it('forwards GET under the prefix with the localization token and nothing of the B2B credentials', async () => {
    const res = await send(s.port, { path: '/l10n/api/translations/demo/web/en/?format=json', headers: { apikey: 'client-key', authorization: 'Bearer client' } });
    assert.equal(res.status, 200);
    assert.equal(res.json<{ language_code: string }>().language_code, 'en');
    const seen = l10n.stats.requests.at(-1)!;
    assert.equal(seen.url, '/api/translations/demo/web/en/?format=json');
    assert.equal(seen.headers.authorization, `Token ${L10N_TOKEN}`);
    assert.equal(seen.headers.apikey, undefined);
    const b2bToken = s.sidecar.tokens!.current()!.value;
    assert.equal(JSON.stringify(seen.headers).includes(b2bToken), false);
    assert.equal(JSON.stringify(seen.headers).includes(CREDENTIALS.apiKey), false);
  });

  it('sends no cookie at all to the localization server: a client\'s jar holds the B2B service\'s session cookies', async () => {
    const res = await send(s.port, { path: '/l10n/api/translations/demo/web/en/', headers: { cookie: 'JSESSIONID=b2b-session-1; other=2' } });
    assert.equal(res.status, 200);
    assert.equal(l10n.stats.requests.at(-1)!.headers.cookie, undefined);
  });

  it('forwards a query on the bare prefix as "/?query" (regression: it became a 502)', async () => {
    const res = await send(s.port, { path: '/l10n?format=json' });
    assert.notEqual(res.status, 502);
    assert.equal(l10n.stats.requests.at(-1)!.url, '/?format=json');
  });

  it('answers HEAD', async () => {
    const res = await send(s.port, { method: 'HEAD', path: '/l10n/api/translations/demo/web/en/' });
    assert.equal(res.status, 200);
  });

  it('refuses other methods with 405 JSON and an Allow header', async () => {
    const count = l10n.stats.count;
    const res = await send(s.port, { method: 'POST', path: '/l10n/api/translations/demo/web/en/', body: '{}', headers: { 'content-type': 'application/json', 'content-length': 2 } });
    assert.equal(res.status, 405);
    assert.equal(res.headers.allow, 'GET, HEAD');
    assert.match(res.json<{ message: string }>().message, /not allowed/);
    assert.equal(l10n.stats.count, count);
  });

  it('passes a 404 in Weblate shape back', async () => {
    const res = await send(s.port, { path: '/l10n/api/translations/demo/web/xx/' });
    assert.equal(res.status, 404);
    assert.ok(res.json());
  });

  it('never sends the localization token to the B2B service', async () => {
    const res = await send(s.port, { path: '/pub/b2b/v1/echo' });
    const echo = res.json<{ headers: Record<string, string> }>();
    assert.equal(echo.headers.authorization, echoed(`Bearer ${s.sidecar.tokens!.current()!.value}`));
    assert.equal(JSON.stringify(echo).includes(L10N_TOKEN), false);
  });

  it('does not treat a path that only starts like the prefix as the localization route', async () => {
    const count = l10n.stats.count;
    const res = await send(s.port, { path: '/l10nx/whatever' });
    assert.equal(l10n.stats.count, count);
    assert.notEqual(res.status, 200);
  });

  it('counts requests with route="localization" and exports the watched translation', async () => {
    const metrics = await s.sidecar.registry.metrics();
    assert.match(metrics, /b2b_sidecar_requests_total\{route="localization",method="GET",code="200"\} [1-9]/);
    assert.match(metrics, /b2b_sidecar_requests_total\{route="localization",method="POST",code="405"\} 1/);
    assert.match(metrics, /b2b_sidecar_translation_units\{project="demo",component="web",language="en",state="total"\} \d+/);
  });
});

/** Weblate-style redirects through `/l10n`, on both engines (the client used to land on the B2B route). */
for (const engine of ENGINES) {
  describe(`localization route redirects (${engine})`, () => {
    it('follows a trailing-slash 301 of the simulator back under the prefix', async () => {
      const sim = await startSimulator();
      const l10n = createLocalizationSimulator({ token: L10N_TOKEN, tls: await testTls() });
      const { url } = await l10n.start();
      const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { localization: { baseUrl: url, caFile: (await testTls()).caFile, token: L10N_TOKEN } } });
      try {
        const res = await send(s.port, { path: '/l10n/api/translations/demo/web/en?format=json' });
        assert.equal(res.status, 301);
        assert.equal(res.headers.location, '/l10n/api/translations/demo/web/en/?format=json');
        const followed = await send(s.port, { path: res.headers.location! });
        assert.equal(followed.status, 200);
        assert.equal(followed.json<{ language_code: string }>().language_code, 'en');
      } finally {
        await s.stop();
        await l10n.stop();
        await sim.stop();
      }
    });

    it('rewrites Locations on the server (path or URL, base path stripped) and passes other redirects unchanged', async () => {
      const tls = await testTls();
      const sim = await startSimulator();
      const redirects: Record<string, string> = {};
      const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
        res.writeHead(req.url!.endsWith('/created') ? 201 : 301, { location: redirects[req.url!] ?? '/nowhere/', 'content-length': 0 });
        res.end();
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const origin = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
      Object.assign(redirects, {
        '/weblate/api/a': '/weblate/api/a/',
        '/weblate/api/b': `${origin}/weblate/api/b/?page=2`,
        '/weblate/api/c': 'https://elsewhere.example/weblate/api/c/',
        '/weblate/api/d': 'd/',
        '/weblate/api/e': '/accounts/login/?next=/weblate/api/e',
        '/weblate/api/created': '/weblate/api/new/',
      });
      const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { localization: { baseUrl: `${origin}/weblate`, caFile: tls.caFile, token: L10N_TOKEN } } });
      try {
        const location = async (path: string) => (await send(s.port, { path })).headers.location;
        assert.equal(await location('/l10n/api/a'), '/l10n/api/a/');
        assert.equal(await location('/l10n/api/b'), '/l10n/api/b/?page=2');
        assert.equal(await location('/l10n/api/c'), 'https://elsewhere.example/weblate/api/c/');
        assert.equal(await location('/l10n/api/d'), 'd/');
        assert.equal(await location('/l10n/api/e'), '/accounts/login/?next=/weblate/api/e');
        assert.equal(await location('/l10n/api/created'), '/l10n/api/new/');
      } finally {
        await s.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        });
        await sim.stop();
      }
    });
  });
}
