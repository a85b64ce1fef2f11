import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { describe, it } from 'node:test';
import { InvalidResponseError } from '../../src/shared/errors.js';
import {
  createLocalizationClient, parseRetryAfter, parseTranslationRef, weblateReason, type LocalizationClientOptions,
} from '../../src/localization/localization-client.js';
import { LocalizationError, TranslationRefError } from '../../src/localization/localization-errors.js';
import { formatTranslationRef, translationApiPath } from '../../src/config/translation-ref.js';
import { createLocalizationSimulator, type LocalizationSimulatorOptions } from '../../src/simulator/localization-simulator.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { testTls } from '../helpers/tls.js';

const TOKEN = 'wlu_test5ecret4ba8c01d2e9f';
const EN = { project: 'demo', component: 'web', language: 'en' };

/** Runs `fn` against a started simulator and a client trusting the test CA; tears both down. */
async function withSimulator(
  simOptions: Omit<LocalizationSimulatorOptions, 'tls'>,
  clientOptions: Partial<LocalizationClientOptions>,
  fn: (ctx: { sim: ReturnType<typeof createLocalizationSimulator>; client: ReturnType<typeof createLocalizationClient> }) => Promise<void>,
): Promise<void> {
  const tls = await testTls();
  const sim = createLocalizationSimulator({ ...simOptions, tls });
  const { url } = await sim.start();
  const client = createLocalizationClient({ baseUrl: url, ca: loadTrustedCas(tls.caFile), timeoutMs: 5000, ...clientOptions });
  try {
    await fn({ sim, client });
  } finally {
    await client.close();
    await sim.stop();
  }
}

/** A bare HTTPS server with the test certificate, for answers the simulator does not give. */
async function startHttps(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; server: Server; hits: string[] }> {
  const tls = await testTls();
  const hits: string[] = [];
  const server = createServer({ cert: tls.certPem, key: tls.keyPem }, (req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, server, hits };
}

async function stopHttps(server: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

async function failure(promise: Promise<unknown>): Promise<LocalizationError> {
  const err = await promise.then(() => assert.fail('expected a failure'), (e: unknown) => e);
  assert.ok(err instanceof LocalizationError, `not a LocalizationError: ${String(err)}`);
  return err;
}

describe('localization client', () => {
  it('attaches the token and Accept, and returns the validated translation with the rate-limit header', async () => {
    await withSimulator({ token: TOKEN }, { token: () => TOKEN }, async ({ sim, client }) => {
      const { translation, rateLimitRemaining } = await client.getTranslation(EN);
      assert.equal(translation.language.name, 'English');
      assert.equal(translation.component.source_language?.code, 'ru');
      assert.equal(rateLimitRemaining, 4999);
      const [seen] = sim.stats.requests;
      assert.equal(seen?.method, 'GET');
      assert.equal(seen?.url, '/api/translations/demo/web/en/');
      assert.equal(seen?.headers.authorization, `Token ${TOKEN}`);
      assert.equal(seen?.headers.accept, 'application/json');
    });
  });

  it('sends no Authorization header when no token is configured', async () => {
    await withSimulator({}, {}, async ({ sim, client }) => {
      await client.getTranslation(EN);
      assert.equal(sim.stats.requests[0]?.headers.authorization, undefined);
    });
  });

  for (const shape of ['detail', 'errors'] as const) {
    it(`reports 401 with the server's reason (${shape} error shape) and never the token`, async () => {
      const wrong = 'wlu_wrongtoken123456';
      await withSimulator({ token: TOKEN }, { token: () => wrong }, async ({ sim, client }) => {
        sim.faults.errorShape = shape;
        const err = await failure(client.getTranslation(EN));
        assert.equal(err.code, 'SIDECAR_ERR_L10N_UNAUTHORIZED');
        assert.equal(err.upstreamStatus, 401);
        assert.equal(err.serverReason, 'Invalid token.');
        assert.ok(!err.message.includes(wrong) && !err.message.includes(TOKEN));
      });
    });

    it(`reports 404 with the server's reason (${shape} error shape)`, async () => {
      await withSimulator({}, {}, async ({ sim, client }) => {
        sim.faults.errorShape = shape;
        const err = await failure(client.getTranslation({ ...EN, language: 'xx' }));
        assert.equal(err.code, 'SIDECAR_ERR_L10N_NOT_FOUND');
        assert.equal(err.serverReason, 'No Translation matches the given query.');
        assert.match(err.message, /demo\/web\/xx not found: No Translation matches/);
      });
    });
  }

  it('reports 429 with Retry-After in seconds', async () => {
    await withSimulator({}, {}, async ({ sim, client }) => {
      sim.faults.rateLimitNext(120);
      const err = await failure(client.getTranslation(EN));
      assert.equal(err.code, 'SIDECAR_ERR_L10N_RATE_LIMITED');
      assert.equal((err as unknown as { retryAfterSeconds: number }).retryAfterSeconds, 120);
      assert.equal(err.rateLimitRemaining, 4999);
    });
  });

  it('reports 429 with Retry-After as an HTTP-date', async () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    await withSimulator({}, { wallNow: () => now }, async ({ sim, client }) => {
      sim.faults.rateLimitNext(new Date(now + 90_000).toUTCString());
      const err = await failure(client.getTranslation(EN));
      assert.equal((err as unknown as { retryAfterSeconds: number }).retryAfterSeconds, 90);
    });
  });

  it('reports a 5xx as a server error with the reason', async () => {
    await withSimulator({}, {}, async ({ sim, client }) => {
      sim.faults.failNext(503);
      const err = await failure(client.getTranslation(EN));
      assert.equal(err.code, 'SIDECAR_ERR_L10N_SERVER');
      assert.equal(err.upstreamStatus, 503);
      assert.equal(err.serverReason, 'A server error occurred.');
    });
  });

  it('names the bad field of a malformed answer', async () => {
    await withSimulator({}, {}, async ({ sim, client }) => {
      sim.faults.malformNext('component.project.slug');
      const err = await client.getTranslation(EN).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof InvalidResponseError);
      assert.equal(err.field, 'component.project.slug');
    });
  });

  it('never follows a redirect, so the token cannot travel to another host', async () => {
    const elsewhere = await startHttps((_req, res) => res.end('{}'));
    const redirecting = await startHttps((_req, res) => {
      res.writeHead(302, { location: `${elsewhere.url}/api/translations/demo/web/en/` }).end();
    });
    const tls = await testTls();
    const client = createLocalizationClient({ baseUrl: redirecting.url, ca: loadTrustedCas(tls.caFile), token: () => TOKEN, timeoutMs: 5000 });
    try {
      const err = await failure(client.getTranslation(EN));
      assert.equal(err.code, 'SIDECAR_ERR_L10N_SERVER');
      assert.match(err.message, /redirect \(not followed\)/);
      assert.deepEqual(redirecting.hits, ['/api/translations/demo/web/en/']);
      assert.deepEqual(elsewhere.hits, []);
    } finally {
      await client.close();
      await stopHttps(redirecting.server);
      await stopHttps(elsewhere.server);
    }
  });

  it('rejects a 200 that is not JSON', async () => {
    const html = await startHttps((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>'));
    const client = createLocalizationClient({ baseUrl: html.url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 5000 });
    try {
      const err = await client.getTranslation(EN).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof InvalidResponseError);
      assert.equal(err.field, '(body)');
    } finally {
      await client.close();
      await stopHttps(html.server);
    }
  });

  it('reports an untrusted certificate as a TLS/network failure', async () => {
    await withSimulator({}, { ca: undefined }, async ({ client }) => {
      const err = await failure(client.getTranslation(EN));
      assert.equal(err.code, 'SIDECAR_ERR_L10N_REQUEST');
      assert.match(err.message, /network or TLS/);
    });
  });

  it('reports a server that never answers as a timeout', async () => {
    const silent = await startHttps(() => undefined);
    const client = createLocalizationClient({ baseUrl: silent.url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 150 });
    try {
      const err = await failure(client.getTranslation(EN));
      assert.equal(err.code, 'SIDECAR_ERR_L10N_TIMEOUT');
      assert.match(err.message, /did not answer within 150 ms/);
    } finally {
      await client.close();
      await stopHttps(silent.server);
    }
  });

  it('a timeoutMs above 2^31-1 is clamped, not turned into a 1 ms deadline (docs/traps.md T15)', async () => {
    const slow = await startHttps((_req, res) => {
      setTimeout(() => res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not found."}'), 50);
    });
    const client = createLocalizationClient({ baseUrl: slow.url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 2 ** 31 });
    try {
      const err = await failure(client.getTranslation(EN));
      assert.equal(err.code, 'SIDECAR_ERR_L10N_NOT_FOUND', err.message);
    } finally {
      await client.close();
      await stopHttps(slow.server);
    }
  });

  it('refuses an http:// baseUrl unless allowed', () => {
    assert.throws(() => createLocalizationClient({ baseUrl: 'http://127.0.0.1:1', timeoutMs: 1000 }), /must be https/);
    const client = createLocalizationClient({ baseUrl: 'http://127.0.0.1:1', timeoutMs: 1000, allowInsecureHttp: true });
    void client.close();
  });
});

describe('translation references', () => {
  it('parses project/component/language', () => {
    assert.deepEqual(parseTranslationRef('demo/web-app_2/pt_BR'), { project: 'demo', component: 'web-app_2', language: 'pt_BR' });
  });

  it('parses a component inside a category, plain or encoded, and builds its API path as Weblate does', () => {
    const want = { project: 'hello', component: 'docs/usage', language: 'cs' };
    for (const text of ['hello/docs/usage/cs', 'hello/docs%2Fusage/cs', 'hello/docs%2fusage/cs', 'hello/docs%252Fusage/cs']) {
      assert.deepEqual(parseTranslationRef(text), want, text);
    }
    assert.deepEqual(parseTranslationRef('hello/a/b/usage/cs'), { project: 'hello', component: 'a/b/usage', language: 'cs' });
    assert.equal(translationApiPath(want), '/api/translations/hello/docs%252Fusage/cs/');
    assert.equal(translationApiPath({ project: 'demo', component: 'web', language: 'pt_BR' }), '/api/translations/demo/web/pt_BR/');
    assert.equal(formatTranslationRef(parseTranslationRef('hello/docs%2Fusage/cs')), 'hello/docs/usage/cs');
  });

  for (const bad of ['../x', 'a/b', 'a/../b', 'demo/web/..', './web/en', 'demo/web/en%2F', 'demo//en', 'demo/web/en?format=api', '',
    'demo/docs/../en', 'demo/docs%2F..%2Fx/en', 'demo/docs%2F/en', 'demo/%2Fweb/en', 'demo/docs%5Cweb/en', 'demo/docs%2Fweb/en/']) {
    it(`rejects ${JSON.stringify(bad)} (no path traversal into other API paths)`, () => {
      assert.throws(() => parseTranslationRef(bad), TranslationRefError);
    });
  }

  it('refuses a hand-built reference with a slash without sending anything', async () => {
    await withSimulator({}, {}, async ({ sim, client }) => {
      // A usage error found before any request (config/translation-ref.ts), not a server failure.
      await assert.rejects(client.getTranslation({ project: 'demo', component: 'web', language: '../../users' }), { name: 'TranslationRefError', code: 'SIDECAR_ERR_L10N_BAD_REF' });
      assert.equal(sim.stats.count, 0);
    });
  });
});

describe('Weblate error parsing', () => {
  it('reads both error shapes', () => {
    assert.equal(weblateReason('{"detail":"Not found."}'), 'Not found.');
    assert.equal(weblateReason(JSON.stringify({
      type: 'validation_error',
      errors: [{ code: 'invalid', detail: 'Bad value.', attr: 'language' }, { code: 'x', detail: 'Other.', attr: null }],
    })), 'language: Bad value.; Other.');
    assert.equal(weblateReason('<html>502 Bad Gateway</html>'), undefined);
    assert.equal(weblateReason('{"errors":[{"code":"x"}]}'), undefined);
  });

  it('reads Retry-After as seconds or an HTTP-date', () => {
    const now = Date.UTC(2026, 0, 1);
    assert.equal(parseRetryAfter('30', now), 30);
    assert.equal(parseRetryAfter(new Date(now + 61_500).toUTCString(), now), 61);
    assert.equal(parseRetryAfter(new Date(now - 5_000).toUTCString(), now), 0);
    assert.equal(parseRetryAfter('soon', now), undefined);
    assert.equal(parseRetryAfter(undefined, now), undefined);
  });
});
