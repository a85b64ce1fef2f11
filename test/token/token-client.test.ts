import assert from 'node:assert/strict';
import { createServer as createHttpsServer } from 'node:https';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { InvalidResponseError, TokenRefusedError, TokenRequestError, TokenUnauthorizedError } from '../../src/shared/errors.js';
import { createTokenClient, gentokenUrl, type Credentials } from '../../src/token/token-client.js';
import { loadTrustedCas } from '../../src/shared/tls.js';
import { generateTlsMaterial } from '../../src/simulator/certs.js';
import { ok, startGentokenServer, type Reply } from '../helpers/gentoken-server.js';
import { testTls } from '../helpers/tls.js';
import { createClientCa } from '../helpers/client-certs.js';

const creds: Credentials = { apiKey: 'key-ABCDEF123456', password: 'pw-s3cret-!"\\-value', version: 1 };

/** Runs one gentoken exchange against a server answering `reply`; returns the outcome and the server's log. */
async function exchange(reply: Reply, timeoutMs = 5000) {
  const server = await startGentokenServer(() => reply);
  const client = createTokenClient({ baseUrl: server.url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs });
  try {
    const result = await client.requestToken(creds).then(
      (value) => ({ value, error: undefined }),
      (error: unknown) => ({ value: undefined, error }),
    );
    return { ...result, requests: server.requests };
  } finally {
    await client.close();
    await server.close();
  }
}

function assertNoSecret(err: unknown): void {
  const text = `${String(err)} ${JSON.stringify(err)}`;
  for (const s of [creds.password, creds.apiKey]) assert.ok(!text.includes(s), `error mentions a secret: ${text}`);
}

describe('gentoken URL', () => {
  it('joins the path whether or not baseUrl has a path or a trailing slash', () => {
    assert.equal(gentokenUrl({ baseUrl: 'https://a.example' }), 'https://a.example/pub/b2b/v1/auth/gentoken');
    assert.equal(gentokenUrl({ baseUrl: 'https://a.example/' }), 'https://a.example/pub/b2b/v1/auth/gentoken');
    assert.equal(gentokenUrl({ baseUrl: 'https://a.example:8443/api' }), 'https://a.example:8443/api/pub/b2b/v1/auth/gentoken');
    assert.equal(gentokenUrl({ baseUrl: 'https://a.example/api//' }), 'https://a.example/api/pub/b2b/v1/auth/gentoken');
  });
});

describe('token client', () => {
  it('sends exactly the seed request: POST, JSON headers, ApiKey, body with only the password', async () => {
    const { value, requests } = await exchange(ok('tok-1', 900));
    assert.deepEqual(value, { token: 'tok-1', refreshToken: null, aliveSecondsTtl: 900 });
    assert.equal(requests.length, 1);
    const [req] = requests;
    assert.equal(req!.method, 'POST');
    assert.equal(req!.url, '/pub/b2b/v1/auth/gentoken');
    assert.equal(req!.headers['content-type'], 'application/json');
    assert.equal(req!.headers['accept'], 'application/json');
    assert.equal(req!.headers['apikey'], creds.apiKey);
    assert.equal(req!.headers['authorization'], undefined);
    assert.deepEqual(JSON.parse(req!.body), { password: creds.password });
    assert.deepEqual(Object.keys(JSON.parse(req!.body)), ['password']);
  });

  it('waits past an interim 103 Early Hints for the final answer', async () => {
    const { value, error } = await exchange({ ...ok('tok-after-103', 900), earlyHints: true });
    assert.equal(error, undefined);
    assert.equal(value?.token, 'tok-after-103');
  });

  it('ignores extra properties and accepts a string refreshToken', async () => {
    const { value } = await exchange({ status: 200, body: { token: 't0k', refreshToken: 'r', aliveSecondsTtl: 5, extra: 1 } });
    assert.deepEqual(value, { token: 't0k', refreshToken: 'r', aliveSecondsTtl: 5 });
  });

  // refreshToken is never read: a serialiser dropping null fields (Jackson NON_NULL) omits it.
  const unread: Array<[string, Record<string, unknown>]> = [
    ['without refreshToken', { token: 't0k', aliveSecondsTtl: 5 }],
    ['with refreshToken null', { token: 't0k', refreshToken: null, aliveSecondsTtl: 5 }],
    ['with a numeric refreshToken', { token: 't0k', refreshToken: 1, aliveSecondsTtl: 5 }],
  ];
  for (const [name, body] of unread) {
    it(`accepts a 200 ${name} (the field is not read)`, async () => {
      const { value, error } = await exchange({ status: 200, body });
      assert.equal(error, undefined);
      assert.deepEqual(value, body);
    });
  }

  const invalid: Array<[string, unknown, string]> = [
    ['missing token', { refreshToken: null, aliveSecondsTtl: 900 }, 'token'],
    ['empty token', { token: '', refreshToken: null, aliveSecondsTtl: 900 }, 'token'],
    ['CR/LF in the token', { token: 'abc\r\nX-Evil: 1', refreshToken: null, aliveSecondsTtl: 900 }, 'token'],
    ['non-ASCII token', { token: 'tökén', refreshToken: null, aliveSecondsTtl: 900 }, 'token'],
    ['oversized token', { token: 'a'.repeat(8193), refreshToken: null, aliveSecondsTtl: 900 }, 'token'],
    ['string ttl', { token: 't', refreshToken: null, aliveSecondsTtl: '900' }, 'aliveSecondsTtl'],
    ['non-numeric ttl', { token: 't', refreshToken: null, aliveSecondsTtl: 'soon' }, 'aliveSecondsTtl'],
    ['fractional ttl', { token: 't', refreshToken: null, aliveSecondsTtl: 1.5 }, 'aliveSecondsTtl'],
    ['zero ttl', { token: 't', refreshToken: null, aliveSecondsTtl: 0 }, 'aliveSecondsTtl'],
    ['missing ttl', { token: 't', refreshToken: null }, 'aliveSecondsTtl'],
    ['a JSON array', [], 'body'],
    ['a non-JSON body', '<html>oops</html>', 'body'],
  ];
  for (const [name, body, field] of invalid) {
    it(`rejects a 200 with ${name}, naming ${field}`, async () => {
      const { error } = await exchange({ status: 200, body });
      assert.ok(error instanceof InvalidResponseError, String(error));
      assert.equal(error.field, field);
      assertNoSecret(error);
    });
  }

  it('reports a 401 with the server message', async () => {
    const { error } = await exchange({ status: 401, body: { message: 'Invalid ApiKey or password' } });
    assert.ok(error instanceof TokenUnauthorizedError);
    assert.equal(error.serverMessage, 'Invalid ApiKey or password');
  });

  it('reports a 401 without a body', async () => {
    const { error } = await exchange({ status: 401 });
    assert.ok(error instanceof TokenUnauthorizedError);
    assert.equal(error.serverMessage, 'HTTP 401 without a message');
  });

  it('scrubs the credentials from a 401 message that echoes them', async () => {
    const { error } = await exchange({ status: 401, body: { message: `bad password ${creds.password} for ${creds.apiKey}` } });
    assert.ok(error instanceof TokenUnauthorizedError);
    assertNoSecret(error);
  });

  it('scrubs a password echoed inside the request body the server quotes, escaped, where the 300-character cut falls inside it', async () => {
    // A framework that echoes the rejected body: the password (with " and \\) JSON-escaped inside
    // the message. Cut first, the padding left a prefix of the password in the log.
    const echoed = `${'x'.repeat(270)} body was ${JSON.stringify({ password: creds.password })}`;
    const { error } = await exchange({ status: 401, body: { message: echoed } });
    assert.ok(error instanceof TokenUnauthorizedError);
    assertNoSecret(error);
    const escapedPrefix = JSON.stringify(creds.password).slice(1, 8);
    assert.ok(!error.serverMessage.includes(escapedPrefix), error.serverMessage);
    assert.ok(!error.serverMessage.includes(creds.password.slice(0, 7)), error.serverMessage);
    assert.ok(error.serverMessage.length <= 300);
  });

  it('scrubs a prefix of the password or the ApiKey that the server quotes, cut (docs/traps.md T64)', async () => {
    const { error } = await exchange({ status: 401, body: { message: `password starting ${creds.password.slice(0, 8)}… for key ${creds.apiKey.slice(-9)} rejected` } });
    assert.ok(error instanceof TokenUnauthorizedError);
    for (const secret of [creds.password, creds.apiKey]) {
      for (let i = 0; i + 6 <= secret.length; i++) assert.ok(!error.serverMessage.includes(secret.slice(i, i + 6)), error.serverMessage);
    }
    assert.match(error.serverMessage, /^password starting \[REDACTED\]… for key \[REDACTED\] rejected$/);
  });

  it('reports a 500 as a request error', async () => {
    const { error } = await exchange({ status: 500, body: { message: 'boom' } });
    assert.ok(error instanceof TokenRequestError);
    assert.equal(error.message, 'auth server answered HTTP 500');
  });

  it('reports a refused connection', async () => {
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const client = createTokenClient({ baseUrl: `https://127.0.0.1:${port}`, timeoutMs: 5000 });
    const error = await client.requestToken(creds).catch((e: unknown) => e);
    await client.close();
    assert.ok(error instanceof TokenRequestError);
    assert.equal(error.message, 'auth server unreachable: ECONNREFUSED');
    assert.equal(error.kind, 'connection_refused');
  });

  it('refuses a server certified by a CA it does not trust', async () => {
    const server = await startGentokenServer();
    const other = await generateTlsMaterial(['localhost']);
    const client = createTokenClient({ baseUrl: server.url, ca: { file: 'other-ca.pem', extraPem: other.caPem }, timeoutMs: 5000 });
    const error = await client.requestToken(creds).catch((e: unknown) => e);
    await client.close();
    await server.close();
    assert.ok(error instanceof TokenRequestError);
    assert.equal(error.kind, 'tls');
    // The OpenSSL code, what it means and where to fix it; never "unreachable".
    assert.match(error.message, /^TLS: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY): the (server certificate|issuer).* not (signed by a )?trusted.*; check service\.caFile$/);
    assert.equal(server.requests.length, 0);
  });

  it('names the certificate when it is issued for another host name', async () => {
    const wrong = await generateTlsMaterial(['other.example']);
    const server = await startGentokenServer(undefined, wrong);
    const client = createTokenClient({ baseUrl: server.url, ca: { file: 'ca.pem', extraPem: wrong.caPem }, timeoutMs: 5000 });
    const error = await client.requestToken(creds).catch((e: unknown) => e);
    await client.close();
    await server.close();
    assert.ok(error instanceof TokenRequestError);
    assert.equal(error.kind, 'tls');
    assert.match(error.message, /^TLS: ERR_TLS_CERT_ALTNAME_INVALID: the server certificate is not issued for this host name .*; check service\.caFile$/);
  });

  it('names a possible missing client certificate when the server ends a TLS 1.2 handshake with handshake_failure, not service.caFile', async () => {
    // Node's own TLS server requiring a client certificate under TLS 1.2, as Java, Go or Envoy fronts
    // do: they refuse in the handshake instead of with nginx's 400 page.
    const tls = await testTls();
    const clientCa = await createClientCa();
    const server = createHttpsServer({ key: tls.keyPem, cert: tls.certPem, ca: clientCa.caPem, requestCert: true, rejectUnauthorized: true, maxVersion: 'TLSv1.2' }, (_req, res) => res.end('{}'));
    server.on('tlsClientError', () => { /* expected: the client presented no certificate */ });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const client = createTokenClient({ baseUrl: `https://localhost:${(server.address() as AddressInfo).port}`, ca: loadTrustedCas(tls.caFile), timeoutMs: 5000 });
    try {
      const error = await client.requestToken(creds).catch((e: unknown) => e);
      assert.ok(error instanceof TokenRequestError);
      assert.equal(error.kind, 'tls');
      assert.match(error.message, /^TLS: ERR_SSL_\S+_ALERT_HANDSHAKE_FAILURE: the server refused the handshake: it may require a client certificate \(mutual TLS: set service\.certFile and service\.keyFile\)/);
      assert.doesNotMatch(error.message, /caFile/);
    } finally {
      await client.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });

  it('classifies a 403 as refused, with the server message scrubbed of the credentials', async () => {
    const { error } = await exchange({ status: 403, body: { message: `address not allowed for ${creds.apiKey}` } });
    assert.ok(error instanceof TokenRefusedError);
    assert.equal(error.code, 'SIDECAR_ERR_TOKEN_REFUSED');
    assert.match(error.message, /^gentoken refused \(HTTP 403\): address not allowed for \[REDACTED\]$/);
    assertNoSecret(error);
    const bare = await exchange({ status: 403 });
    assert.ok(bare.error instanceof TokenRefusedError);
    assert.equal(bare.error.serverMessage, 'no message');
  });

  for (const [status, retryAfter] of [[429, '30'], [503, 'Sun, 22 Nov 2026 12:02:00 GMT'], [429, undefined]] as const) {
    it(`classifies a ${status}${retryAfter ? ` with Retry-After ${retryAfter}` : ' without Retry-After'} as rate_limited and passes the header on`, async () => {
      const { error } = await exchange({ status, ...(retryAfter ? { headers: { 'Retry-After': retryAfter } } : {}) });
      assert.ok(error instanceof TokenRequestError);
      assert.equal(error.kind, 'rate_limited');
      assert.equal(error.upstreamStatus, status);
      assert.equal(error.retryAfter, retryAfter);
    });
  }

  it('classifies a 503 without Retry-After as a server error, a 418 as http', async () => {
    const a = await exchange({ status: 503 });
    assert.ok(a.error instanceof TokenRequestError);
    assert.equal(a.error.kind, 'server_error');
    const b = await exchange({ status: 418 });
    assert.ok(b.error instanceof TokenRequestError);
    assert.equal(b.error.kind, 'http');
  });

  it('classifies an unknown host name as dns', async () => {
    const client = createTokenClient({ baseUrl: 'https://no-such-host.invalid', timeoutMs: 5000 });
    const error = await client.requestToken(creds).catch((e: unknown) => e);
    await client.close();
    assert.ok(error instanceof TokenRequestError);
    assert.equal(error.kind, 'dns');
  });

  it('gives up after timeoutMs', async () => {
    const { error } = await exchange({ hang: true }, 300);
    assert.ok(error instanceof TokenRequestError);
    assert.equal(error.message, 'timed out after 300ms');
    assert.equal(error.kind, 'timeout');
  });

  it('a timeoutMs above 2^31-1 is clamped, not turned into a 1 ms deadline (docs/traps.md T15)', async () => {
    const server = await startGentokenServer(async () => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return ok('tok-slow', 900);
    });
    const client = createTokenClient({ baseUrl: server.url, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 2 ** 31 });
    try {
      assert.equal((await client.requestToken(creds)).token, 'tok-slow');
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('gives up after timeoutMs while the TLS handshake hangs', async () => {
    // Accepts TCP and never speaks TLS: the deadline must not wait for undici's connect timeout.
    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((socket) => { sockets.push(socket); });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const { port } = silent.address() as AddressInfo;
    const client = createTokenClient({ baseUrl: `https://127.0.0.1:${port}`, ca: loadTrustedCas((await testTls()).caFile), timeoutMs: 300 });
    try {
      const started = Date.now();
      const error = await client.requestToken(creds).then(() => undefined, (e: unknown) => e);
      assert.ok(error instanceof TokenRequestError);
      assert.equal(error.message, 'timed out after 300ms');
      assert.ok(Date.now() - started < 5000, 'answered by the deadline, not by the 10 s connect timeout');
    } finally {
      await client.close();
      for (const socket of sockets) socket.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it('does not follow a 307 redirect to another server (docs/traps.md T13)', async () => {
    const canary = await startGentokenServer();
    const { error, requests } = await exchange({
      status: 307,
      headers: { location: `${canary.url}/pub/b2b/v1/auth/gentoken` },
    });
    await canary.close();
    assert.equal(requests.length, 1);
    assert.ok(error instanceof TokenRequestError);
    assert.match(error.message, /redirect/);
    assert.equal(canary.requests.length, 0);
    assert.equal(error.upstreamStatus, 307);
    assert.equal(error.location, `${canary.url}/pub/b2b/v1/auth/gentoken`);
  });

  it('names the client certificate when a 400 is a TLS front\'s mutual-TLS page, and says only the status otherwise', async () => {
    // nginx 1.22's own pages for its 496 and 495 codes (src/http/ngx_http_special_response.c), sent as 400.
    const page = (title: string) => `<html>\r\n<head><title>400 ${title}</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>${title}</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n`;
    const none = await exchange({ status: 400, body: page('No required SSL certificate was sent'), headers: { 'Content-Type': 'text/html' } });
    assert.ok(none.error instanceof TokenRequestError);
    assert.equal(none.error.kind, 'http');
    assert.equal(none.error.upstreamStatus, 400);
    assert.match(none.error.message, /^auth server answered HTTP 400: it requires a client certificate \(mutual TLS\) and none was presented .*set service\.certFile and service\.keyFile$/);
    const rejected = await exchange({ status: 400, body: page('The SSL certificate error'), headers: { 'Content-Type': 'text/html' } });
    assert.ok(rejected.error instanceof TokenRequestError);
    assert.match(rejected.error.message, /^auth server answered HTTP 400: it did not accept the client certificate presented/);
    const plain = await exchange({ status: 400, body: { message: 'bad request' } });
    assert.ok(plain.error instanceof TokenRequestError);
    assert.equal(plain.error.message, 'auth server answered HTTP 400');
    assert.equal(plain.error.kind, 'http');
  });

  it('tells a redirect target without its query (relative ones resolved) and the status of other answers', async () => {
    const relative = await exchange({ status: 302, headers: { location: '/v2/auth/gentoken?sig=abc' } });
    assert.ok(relative.error instanceof TokenRequestError);
    assert.match(relative.error.location ?? '', /^https:\/\/localhost:\d+\/v2\/auth\/gentoken$/);
    const missing = await exchange({ status: 404, body: { message: 'no' } });
    assert.ok(missing.error instanceof TokenRequestError);
    assert.equal(missing.error.upstreamStatus, 404);
    assert.equal(missing.error.location, undefined);
  });

  it('close is idempotent', async () => {
    const client = createTokenClient({ baseUrl: 'https://localhost:1', timeoutMs: 1000 });
    await client.close();
    await client.close();
  });
});
