import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer as createHttpsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { clientCertificateAlert } from '../../src/shared/tls-alert.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { compileIpGuard } from '../../src/shared/ip-guard.js';
import { systemClock } from '../../src/shared/clock.js';
import { TokenRequestError } from '../../src/shared/errors.js';
import { createTokenClient } from '../../src/token/token-client.js';
import { checkGentoken } from '../../src/doctor/gentoken-check.js';
import { failureReason } from '../../src/token/answers/failure-reasons.js';
import { createEgress } from '../../src/upstream/egress.js';
import { createProxyEngine } from '../../src/upstream/create-engine.js';
import { createProxyHandler } from '../../src/proxy/proxy-handler.js';
import { ReplayBudget } from '../../src/proxy/body/replay-body.js';
import type { RouteCredentials } from '../../src/proxy/route-credentials.js';
import { createClientCa, type ClientCa } from '../helpers/client-certs.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { NO_METRICS } from '../helpers/no-metrics.js';
import { ENGINES, send } from '../helpers/stack.js';
import { testTls, type TestTls } from '../helpers/tls.js';

/**
 * Node's own HTTPS server requiring a client certificate under TLS 1.3 (`requestCert`,
 * `rejectUnauthorized`): the client's handshake completes before the server judges the
 * certificate, so the refusal comes after the request was written. Without a certificate the
 * server sends the alert `certificate required` (116); with one from another CA it closes the
 * connection without an alert. Both used to read as "auth server unreachable" / a reset.
 */
let tls: TestTls;
let vendorCa: ClientCa;
let server: Server;
let baseUrl: string;
let accepted = 0;

before(async () => {
  tls = await testTls();
  vendorCa = await createClientCa('vendor client CA');
  server = createHttpsServer({ key: tls.keyPem, cert: tls.certPem, ca: vendorCa.caPem, requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3' }, (_req, res) => {
    accepted++;
    res.end('{"token":"tok-0123456789abcdef","refreshToken":null,"aliveSecondsTtl":900}');
  });
  server.on('tlsClientError', () => { /* expected: the certificate is refused */ });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `https://localhost:${(server.address() as AddressInfo).port}`;
});
after(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

/** No pair, or a pair the vendor's CA did not issue. */
async function identity(kind: 'none' | 'another CA' | 'the vendor\'s') {
  if (kind === 'none') return undefined;
  const pair = await (kind === 'another CA' ? await createClientCa('another CA') : vendorCa).issue('client');
  return { certPem: pair.certPem, contextKeyPem: pair.keyPem };
}

const MISSING = /refused the connection without a client certificate \(TLS alert: certificate required\): it requires mutual TLS; set service\.certFile and service\.keyFile/;
/** No alert, only a close: the failure keeps its kind and gains this hint (a refusal is likely, not certain). */
const HINT = /the server had asked for a client certificate and closed the new connection before answering, with no TLS alert: if this persists, check service\.certFile and service\.keyFile with the vendor/;

describe('a TLS 1.3 server refusing the client certificate', () => {
  for (const [kind, expected] of [['none', MISSING], ['another CA', HINT]] as const) {
    it(`gentoken with ${kind === 'none' ? 'no client certificate: cause tls' : 'a client certificate from another CA (no alert): its own cause'}, a message naming the client certificate, not the CA file`, async () => {
      const ca = loadTrustedCas(tls.caFile);
      const pair = await identity(kind);
      const egress = createEgress({ route: 'service', ca, ...(pair ? { clientCertificate: () => pair } : {}) });
      const client = createTokenClient({ baseUrl, ca, timeoutMs: 5000, egress });
      try {
        const error = await client.requestToken({ apiKey: 'api-key-0123456789', password: 'password-0123456789', version: 1 }).catch((e: unknown) => e);
        assert.ok(error instanceof TokenRequestError, String(error));
        // A close without an alert may be a refusal or a server shedding load: not called tls.
        assert.equal(error.kind, kind === 'none' ? 'tls' : 'unreachable');
        assert.match(error.message, expected);
        const reason = failureReason(error.kind, error.message, 0);
        assert.match(reason, kind === 'none' ? expected : /auth server unreachable/, '/readyz says it too');
        assert.doesNotMatch(reason, /not trusted|caFile/);
      } finally {
        await client.close();
      }
    });
  }

  it('doctor\'s gentoken step names the client certificate, not service.caFile', async (t) => {
    const client = createTokenClient({ baseUrl, ca: loadTrustedCas(tls.caFile), timeoutMs: 5000 });
    t.after(() => client.close());
    const { step } = await checkGentoken(client, { apiKey: 'api-key-0123456789', password: 'password-0123456789', version: 1 }, { baseUrl });
    assert.equal(step.ok, false);
    assert.match(step.detail, MISSING);
    assert.match(step.hint!, /requires mutual TLS: set service\.certFile and service\.keyFile/);
    assert.doesNotMatch(step.hint!, /caFile/);
  });

  it('gentoken with the vendor\'s pair is answered (the server is not simply broken)', async () => {
    const ca = loadTrustedCas(tls.caFile);
    const pair = await identity('the vendor\'s');
    const client = createTokenClient({ baseUrl, ca, timeoutMs: 5000, egress: createEgress({ route: 'service', ca, clientCertificate: () => pair }) });
    try {
      const before = accepted;
      const answer = await client.requestToken({ apiKey: 'api-key-0123456789', password: 'password-0123456789', version: 1 });
      assert.equal(answer.token, 'tok-0123456789abcdef');
      assert.equal(accepted, before + 1);
    } finally {
      await client.close();
    }
  });

  for (const version of ['TLSv1.2', 'TLSv1.3'] as const) {
    it(`a ${version} server that asked for a certificate, took it and then closed without answering is no certificate refusal${version === 'TLSv1.3' ? ' (the hint only)' : ''}`, async (t) => {
      const closing = createHttpsServer({ key: tls.keyPem, cert: tls.certPem, ca: vendorCa.caPem, requestCert: true, rejectUnauthorized: true, minVersion: version, maxVersion: version }, (req) => {
        req.socket.destroy(); // a server shedding load, restarting, or refusing the request's size
      });
      await new Promise<void>((r) => closing.listen(0, '127.0.0.1', r));
      t.after(() => new Promise((r) => closing.close(r)));
      const ca = loadTrustedCas(tls.caFile);
      const pair = await identity('the vendor\'s');
      const client = createTokenClient({
        baseUrl: `https://localhost:${(closing.address() as AddressInfo).port}`, ca, timeoutMs: 5000,
        egress: createEgress({ route: 'service', ca, clientCertificate: () => pair }),
      });
      t.after(() => client.close());
      const error = await client.requestToken({ apiKey: 'api-key-0123456789', password: 'password-0123456789', version: 1 }).catch((e: unknown) => e);
      assert.ok(error instanceof TokenRequestError, String(error));
      assert.notEqual(error.kind, 'tls');
      assert.doesNotMatch(error.message, /refused the client certificate/);
      if (version === 'TLSv1.3') assert.match(error.message, HINT);
      else assert.doesNotMatch(error.message, /client certificate/, 'a TLS 1.2 refusal is an alert in the handshake: no guess');
    });
  }

  for (const engine of ENGINES) {
    for (const [kind, expected] of [['none', MISSING], ['another CA', HINT]] as const) {
      it(`a proxied request (engine ${engine}) with ${kind === 'none' ? 'no client certificate' : 'a client certificate from another CA'} is answered 502 naming the client certificate, and logged so`, async (t) => {
        const ca = loadTrustedCas(tls.caFile);
        const pair = await identity(kind);
        const upstream = await createProxyEngine(engine, {
          baseUrl: new URL(baseUrl), ca, maxSockets: 4, keepAliveTimeoutMs: 1000, headersTimeoutMs: 5000, bodyTimeoutMs: 5000,
          egress: createEgress({ route: 'service', ca, ...(pair ? { clientCertificate: () => pair } : {}) }),
        });
        t.after(() => upstream.close());
        const credentials: RouteCredentials = { prepared: { headers: [['authorization', 'Bearer tok-0123456789abcdef']], query: '', cookie: '' }, generation: 1 };
        const capture = createCaptureLogger();
        const handler = createProxyHandler({
          routes: [{ name: 'service', prefix: '', engine: upstream, credentials: { current: () => credentials, acquire: async () => credentials, renewAfterUnauthorized: async () => credentials }, stripHeaders: new Set(['authorization']), stripQuery: new Set(), stripCookies: new Set() }],
          guard: compileIpGuard(['127.0.0.1/32']), metrics: NO_METRICS, logger: capture.logger, clock: systemClock,
          replayBodyLimitBytes: 64 * 1024, replayBudget: new ReplayBudget(1 << 20), logRequests: false,
        });
        const listener = createHttpServer(handler);
        await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
        t.after(() => new Promise<void>((r) => listener.close(() => r())));
        const res = await send((listener.address() as AddressInfo).port, { path: '/pub/b2b/v1/objects/1' });
        assert.equal(res.status, 502);
        const message = res.json<{ message: string }>().message;
        assert.match(message, kind === 'none' ? /^the service refused/ : /^the connection to the service was reset; /);
        assert.match(message, expected);
        const logged = capture.lines().find((l) => l.message === 'upstream request failed');
        assert.match(String(logged?.reason), expected);
      });
    }
  }
});

describe('clientCertificateAlert', () => {
  it('reads the alert from the code or the OpenSSL message, through causes; other alerts and failures are not client-certificate refusals', () => {
    const withCode = (code: string, message = '') => Object.assign(new Error(message), { code });
    assert.deepEqual(clientCertificateAlert(withCode('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED')), { name: 'certificate required', number: 116, missing: true });
    assert.equal(clientCertificateAlert(withCode('ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE'))?.name, 'bad certificate');
    assert.equal(clientCertificateAlert(withCode('ERR_SSL_TLSV1_ALERT_UNKNOWN_CA'))?.number, 48);
    assert.equal(clientCertificateAlert(withCode('ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN'))?.number, 46);
    assert.equal(clientCertificateAlert(Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET', cause: withCode('ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED') }))?.number, 116);
    assert.equal(clientCertificateAlert(withCode('ECONNRESET', 'ssl3_read_bytes:sslv3 alert bad certificate:…:SSL alert number 42'))?.name, 'bad certificate');
    // The server's handshake_failure (TLS 1.2) has its own message; our verdicts on the server's certificate are no alert.
    assert.equal(clientCertificateAlert(withCode('ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE', 'SSL alert number 40')), undefined);
    assert.equal(clientCertificateAlert(withCode('UNABLE_TO_VERIFY_LEAF_SIGNATURE')), undefined);
    assert.equal(clientCertificateAlert(withCode('ECONNRESET')), undefined);
  });
});
