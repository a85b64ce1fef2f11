import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLocalizationSimulator, type LocalizationSimulator } from '../src/simulator/localization-simulator.js';
import { CREDENTIALS, echoed, send, startSidecar, startSimulator, waitReady, type RunningSidecar } from './helpers/stack.js';
import { testTls } from './helpers/tls.js';

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
