import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { checkConfigCommand } from '../../src/commands/check-config.js';
import { doctorCommand } from '../../src/commands/doctor.js';
import { statusCommand } from '../../src/commands/status.js';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { captureIo } from '../helpers/command-io.js';
import { CREDENTIALS, ENGINES, send, startSidecar, waitReady, type RunningSidecar } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startVendor, type Answer, type Vendor } from '../helpers/vendors.js';

/**
 * A service that echoes everything it was sent, in every place an answer can carry text: the
 * body, a response header, `Location`, `WWW-Authenticate`, `Retry-After`, and a cut of the
 * token a message would hold. Beside a running sidecar, `doctor` probes through it with a token
 * doctor never saw; none of it, and no piece of it, may reach doctor's report (docs/security.md,
 * "What doctor prints"). Its tokens are 16 characters, under the 20 that doctor's own fallback
 * (running-sidecar.ts hideTokenLike) recognises, so only the sidecar's redaction can hide them.
 */
const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-doctor-echo-'));
const PLACES = ['body', 'header', 'location', 'challenge', 'retry-after', 'prefix'] as const;

/** Every header, cookie and query value the request carried, as one text. */
function everything(url: URL, headers: Record<string, string | string[] | undefined>): string {
  const values = Object.entries(headers).map(([name, value]) => `${name}=${String(value)}`);
  for (const [name, value] of url.searchParams) values.push(`query ${name}=${value}`);
  return values.join('; ');
}

function startEcho(): Promise<Vendor> {
  return startVendor((_p, req): Answer | undefined => {
    const url = new URL(req.url ?? '/', 'https://vendor.test');
    const text = everything(url, req.headers);
    const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    switch (url.pathname.split('/').pop()) {
      case 'body': return { status: 403, body: { message: `refused: ${text}`, echo: req.headers, query: Object.fromEntries(url.searchParams) } };
      case 'header': return { status: 401, headers: { 'X-Echo': text.replace(/[^\x20-\x7e]/g, '?') }, body: { message: 'no' } };
      case 'location': return { status: 302, headers: { Location: `/login/${encodeURIComponent(token)}/${url.searchParams.get('access_token') ?? ''}?next=${encodeURIComponent(text)}` } };
      case 'challenge': return { status: 401, headers: { 'WWW-Authenticate': `Bearer realm="b2b", error="invalid_token", error_description="token ${token} cookie ${req.headers.cookie ?? ''}"` } };
      case 'retry-after': return { status: 429, headers: { 'Retry-After': token.slice(0, 12) } };
      case 'prefix': return { status: 401, body: { message: `token ${token.slice(0, 10)}… key ${String(req.headers.apikey).slice(0, 9)}… rejected` } };
      default: return undefined;
    }
  }, { tokenBytes: 8 });
}

/**
 * The secrets to look for: each whole, and every piece of 6 characters. The names of this run's
 * temporary folders are taken out first: mkdtemp's random suffix after "b2b-test-" once made
 * "test-a", a piece of the test ApiKey, and the test failed by chance (CI on Node 26).
 */
function assertNoSecretIn(report: string, secrets: readonly string[], what: string): void {
  const output = report.replaceAll(/b2b-[a-z-]+-[A-Za-z0-9]{6}/g, '<tmp>');
  for (const secret of secrets) {
    for (let i = 0; i + 6 <= secret.length; i++) {
      const piece = secret.slice(i, i + 6);
      assert.equal(output.includes(piece), false, `${what} holds "${piece}", a piece of a secret:\n${output}`);
    }
  }
}

describe('nothing the running sidecar holds reaches doctor, status or check-config (a service that echoes everything)', () => {
  let vendor: Vendor;
  let sidecar: RunningSidecar;
  let config: string;
  const secrets = () => [...vendor.tokens, CREDENTIALS.apiKey, CREDENTIALS.password];

  before(async () => {
    vendor = await startEcho();
    const attach = [
      { in: 'header', name: 'Authorization', value: 'Bearer {token}' },
      { in: 'header', name: 'ApiKey', value: '{apiKey}' },
      { in: 'query', name: 'access_token', value: '{token}' },
      { in: 'cookie', name: 'session', value: '{token}' },
    ];
    sidecar = await startSidecar({ baseUrl: vendor.url, overrides: { token: { attach } } });
    await waitReady(sidecar);
    config = join(dir, 'sidecar.yaml');
    writeFileSync(config, stringify({
      listen: { host: '127.0.0.1', port: sidecar.port }, admin: { host: '127.0.0.1', port: sidecar.adminPort },
      service: { baseUrl: vendor.url, caFile: tls.caFile }, credentials: CREDENTIALS, token: { attach },
    }), { mode: 0o600 });
  });
  after(async () => {
    await sidecar.stop();
    await vendor.close();
  });

  it('the echo is real: an app behind the sidecar gets the token back in each place (what doctor must not print)', async () => {
    const token = vendor.tokens.at(-1)!;
    assert.equal(token.length, 16);
    const answer = await send(sidecar.port, { path: '/pub/b2b/v1/echo/body' });
    assert.match(answer.body.toString(), new RegExp(token));
  });

  for (const place of PLACES) {
    for (const json of [true, false]) {
      it(`doctor --probe beside the sidecar: the echo in the ${place}, ${json ? '--json' : 'text'}`, async () => {
        const { io, stdout, stderr } = captureIo({});
        const code = await doctorCommand({ config, probe: `/pub/b2b/v1/echo/${place}`, ...(json ? { json: true } : {}) }, io);
        const output = stdout() + stderr();
        assert.equal(code, 1, output);
        assert.match(output, /not called: a b2b-sidecar with this config answers/, 'doctor obtained no token of its own');
        assert.match(output, /through the running sidecar/);
        assertNoSecretIn(output, secrets(), `doctor's ${json ? 'JSON' : 'text'} report`);
        if (json) {
          const probe = (JSON.parse(stdout()) as DoctorStep[]).find((s) => s.step === 'probe')!;
          // The answer is still shown, redacted: the operator sees what the service said.
          if (place === 'body' || place === 'prefix') assert.match(probe.detail, /\[REDACTED\]/);
        }
      });
    }
  }

  it('doctor --discover-attach beside the sidecar: the tokenless check and its report hold no secret either', async () => {
    const { io, stdout, stderr } = captureIo({});
    await doctorCommand({ config, probe: '/pub/b2b/v1/echo/body', discoverAttach: true, json: true }, io);
    assertNoSecretIn(stdout() + stderr(), secrets(), 'doctor --discover-attach');
  });

  it('an answer the sidecar did not confirm as redacted shows only its status', async () => {
    // A request without the diagnostic header is relayed as is: what an older sidecar would do.
    const plain = await send(sidecar.port, { path: '/pub/b2b/v1/echo/prefix' });
    assert.equal(plain.headers['b2b-sidecar-diagnostic'], undefined);
    const asked = await send(sidecar.port, { path: '/pub/b2b/v1/echo/prefix', headers: { 'b2b-sidecar-diagnostic': '1' } });
    assert.equal(asked.headers['b2b-sidecar-diagnostic'], 'redacted');
    assertNoSecretIn(asked.body.toString(), secrets(), 'the redacted answer');
    // The header asks the sidecar, never the service: it is not forwarded.
    assert.equal(vendor.requests.at(-1)!.headers['b2b-sidecar-diagnostic'], undefined);
  });

  it('status (the command) and /status hold no secret', async () => {
    const { io, stdout, stderr } = captureIo({});
    assert.equal(await statusCommand({ config }, io), 0, stderr());
    assertNoSecretIn(stdout() + stderr(), secrets(), 'status');
    assertNoSecretIn((await send(sidecar.adminPort, { path: '/status' })).body.toString(), secrets(), '/status');
  });

  it('check-config prints the configuration without the inline secrets, valid or not', async () => {
    // Random-looking values: pieces of the test credentials ("passwo") are also key names.
    const inline = { apiKey: 'Kq3vZ8wLmN2pXr7T', password: 'Hj5t"Y9cV\\bN4mQw2E', rkObjectId: 'obj-42' };
    for (const extra of [{}, { listen: { port: 'not a port' } }]) {
      const file = join(dir, `check-${Object.keys(extra).length}.yaml`);
      writeFileSync(file, stringify({ service: { baseUrl: vendor.url, caFile: tls.caFile }, credentials: inline, ...extra }), { mode: 0o600 });
      const { io, stdout, stderr } = captureIo({});
      const code = await checkConfigCommand({ config: file }, io);
      assert.equal(code, Object.keys(extra).length === 0 ? 0 : 2, stderr());
      assertNoSecretIn(stdout() + stderr(), [inline.apiKey, inline.password, JSON.stringify(inline.password)], 'check-config');
    }
  });

  for (const engine of ENGINES) {
    it(`the ${engine} engine relays a diagnostic answer redacted, in every place the echo uses`, async () => {
      const other = await startSidecar({ baseUrl: vendor.url, engine });
      try {
        await waitReady(other);
        for (const place of PLACES) {
          const answer = await send(other.port, { path: `/pub/b2b/v1/echo/${place}`, headers: { 'b2b-sidecar-diagnostic': '1' } });
          assert.equal(answer.headers['b2b-sidecar-diagnostic'], 'redacted', place);
          const everything = JSON.stringify(answer.headers) + answer.body.toString();
          assertNoSecretIn(everything, secrets(), `${engine}: the answer with the echo in the ${place}`);
        }
      } finally {
        await other.stop();
      }
    });
  }
});
