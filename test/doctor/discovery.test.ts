import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { stringify } from 'yaml';
import { doctorCommand, type DoctorArgs } from '../../src/commands/doctor.js';
import { MAX_DISCOVERY_REQUESTS, headersNamedIn, parseTry, placesNamedIn } from '../../src/doctor/attach-discovery.js';
import { createB2bSimulator, type TokenPresentation } from '../../src/simulator/b2b-simulator.js';
import { unknownToken } from '../../src/doctor/decoy-token.js';
import { haltOf } from '../../src/doctor/discovery-halt.js';
import type { DoctorStep } from '../../src/doctor/doctor-report.js';
import { loadConfig } from '../../src/config/load-config.js';
import { captureIo } from '../helpers/command-io.js';
import { CREDENTIALS, send, startSidecar, waitReady } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startVendor, VENDORS, type Rule, type Vendor } from '../helpers/vendors.js';

const tls = await testTls();
const dir = mkdtempSync(join(tmpdir(), 'b2b-discovery-'));
const PROBE = '/pub/b2b/v1/objects/obj-42';
let configs = 0;

function configFor(vendor: Vendor, extra: Record<string, unknown> = {}): string {
  const file = join(dir, `sidecar-${++configs}.yaml`);
  // Free ports: a sidecar on the default admin port would be taken for this config's running one.
  writeFileSync(file, stringify({ service: { baseUrl: vendor.url, caFile: tls.caFile }, credentials: CREDENTIALS, listen: { port: 0 }, admin: { port: 0 }, ...extra }));
  return file;
}

async function vendor(t: TestContext, rule: Rule): Promise<Vendor> {
  const v = await startVendor(rule);
  t.after(() => v.close());
  return v;
}

/** doctor in process, discovery unpaced (no real waiting): the JSON steps, the text and the exit code. */
async function doctor(args: DoctorArgs) {
  const sleeps: number[] = [];
  const sleep = async (ms: number) => { sleeps.push(ms); };
  const json = captureIo({});
  const code = await doctorCommand({ ...args, json: true, sleep }, json.io);
  const text = captureIo({});
  const textCode = await doctorCommand({ ...args, sleep }, text.io);
  assert.equal(textCode, code, 'text and --json reach the same verdict');
  const steps = JSON.parse(json.stdout()) as DoctorStep[];
  return { code, steps, text: text.stdout(), sleeps, discovery: steps.find((s) => s.step === 'discover-attach') };
}

/** Requests discovery sent (everything but gentoken and the probe step's own GET). */
function discoveryRequests(v: Vendor) {
  return v.requests.filter((r) => !r.url.endsWith('/auth/gentoken'));
}

function assertPolite(v: Vendor): void {
  for (const r of v.requests) {
    const sent = `${r.url} ${JSON.stringify(r.headers)} ${r.url.endsWith('/auth/gentoken') ? '' : r.body}`;
    assert.ok(!sent.includes(CREDENTIALS.password), `the password went to ${r.method} ${r.url}`);
    if (!r.url.endsWith('/auth/gentoken')) assert.ok(r.method === 'GET' || r.method === 'HEAD', `${r.method} ${r.url}`);
  }
  // Two doctor runs (JSON and text), each bounded.
  assert.ok(discoveryRequests(v).length <= 2 * (1 + MAX_DISCOVERY_REQUESTS), `${discoveryRequests(v).length} requests`);
}

function assertNoSecrets(text: string, v: Vendor): void {
  for (const secret of [CREDENTIALS.apiKey, CREDENTIALS.password, ...v.tokens]) assert.ok(!text.includes(secret), `a secret leaked: ${text}`);
}

/** Pastes the found block into a config and proxies one GET through a real sidecar. */
async function proxiedStatus(v: Vendor, attachYaml: string): Promise<number> {
  const pasted = join(dir, `pasted-${++configs}.yaml`);
  writeFileSync(pasted, `${stringify({ service: { baseUrl: v.url, caFile: tls.caFile }, credentials: CREDENTIALS, listen: { host: '127.0.0.1', port: 0 }, admin: { host: '127.0.0.1', port: 0 } })}${attachYaml}`);
  const loaded = await loadConfig(pasted, {}); // valid for check-config and run alike
  const s = await startSidecar({ baseUrl: v.url, overrides: { token: { attach: loaded.token.attach } } });
  try {
    await waitReady(s);
    return (await send(s.port, { path: PROBE })).status;
  } finally {
    await s.stop();
  }
}

const FOUND: Array<[name: keyof typeof VENDORS, label: string]> = [
  ['spring', 'X-Access-Token: {token}'],
  ['drf', 'Authorization: Token {token}'],
  ['query', '?access_token={token}'],
  ['bare401', 'AuthToken: {token}'],
  ['forbidden', 'X-API-Token: {token}'],
  ['notFound', 'X-Token: {token}'],
  ['login', 'Cookie AuthToken={token}'],
  ['sloppy', 'X-Auth-Token: {token}'],
];

describe('doctor --discover-attach against vendors that answer as common server stacks do', () => {
  for (const [name, label] of FOUND) {
    it(`${name}: found ${label} (exit 0), and the pasted block gets 200 through run`, async (t) => {
      const v = await vendor(t, VENDORS[name]);
      const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
      assert.equal(out.code, 0, out.text);
      assert.equal(out.discovery?.result, 'found', out.text);
      assert.deepEqual(out.discovery!.accepted, [label]);
      assert.equal(out.discovery!.attach![0]!.value.includes('{token}'), true);
      assert.ok(out.text.includes('Paste into the config file (replacing token.attach):'), out.text);
      assert.ok(out.discovery!.tried!.every((tr) => tr.status !== undefined), 'every presentation tried is listed with its status');
      assert.equal(await proxiedStatus(v, out.discovery!.attachYaml!), 200);
      assertPolite(v);
      assertNoSecrets(out.text + JSON.stringify(out.steps), v);
    });
  }

  it('spring (400 naming the header): tries the named header first, and the old false green is gone', async (t) => {
    const v = await vendor(t, VENDORS.spring);
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    const probe = out.steps.find((s) => s.step === 'probe')!;
    assert.equal(probe.ok, false, 'a 400 is not a passing probe');
    assert.equal(out.discovery!.tried![0]!.label, 'X-Access-Token: {token} without ApiKey');
    assert.match(out.text, /Required request header 'X-Access-Token'/);
  });

  it('sloppy (any Token header value passes): not taken as evidence, thanks to the unknown-token check', async (t) => {
    const v = await vendor(t, VENDORS.sloppy);
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    const token = out.discovery!.tried!.find((tr) => tr.label === 'Token: {token} without ApiKey')!;
    assert.equal(token.status, 200);
    assert.match(token.note!, /unknown token is accepted too/);
    assert.deepEqual(out.discovery!.accepted, ['X-Auth-Token: {token}']);
  });

  it('drf: shows the WWW-Authenticate challenge and the body, and tries Authorization: Token first', async (t) => {
    const v = await vendor(t, VENDORS.drf);
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    assert.equal(out.discovery!.baseline!.withoutToken.challenge, 'Token');
    assert.equal(out.discovery!.baseline!.withoutToken.excerpt, 'Authentication credentials were not provided.');
    assert.equal(out.discovery!.tried![0]!.label, 'Authorization: Token {token} without ApiKey');
    assert.match(out.text, /baseline without a token: 401 WWW-Authenticate: Token "Authentication credentials were not provided\."/);
  });

  it('a config that already works: configured, discovery skipped, exit 0 (was a false red)', async (t) => {
    const v = await vendor(t, VENDORS.bearer);
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    assert.equal(out.code, 0, out.text);
    assert.equal(out.discovery!.result, 'configured');
    // The verdict the README names opens the line.
    assert.match(out.discovery!.detail, /^configured: token\.attach already works/);
    assert.match(out.text, /✓ discover-attach: configured: /);
    assert.equal(discoveryRequests(v).length, 2 * 2, 'the probe and one baseline per run');
  });

  it('a path that needs no token: cannot-tell, exit 1, with or without a working config', async (t) => {
    const v = await vendor(t, VENDORS.open);
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    assert.equal(out.code, 1);
    assert.equal(out.discovery!.result, 'cannot-tell');
    assert.match(out.discovery!.hint!, /choose a --probe path that needs the token/);
  });

  it('a presentation outside every list: none (exit 1) quoting the baseline for a support ticket; --try finds it', async (t) => {
    const v = await vendor(t, VENDORS.outside);
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    assert.equal(out.code, 1);
    assert.equal(out.discovery!.result, 'none');
    assert.match(out.discovery!.detail, /Without a token the service answers 401, no WWW-Authenticate, body: session required/);
    assert.match(out.discovery!.hint!, /support team/);
    assert.ok(out.discovery!.tried!.length >= 17, 'the whole list was tried');
    assertPolite(v);

    const guessed = await doctor({ config: configFor(v), probe: PROBE, try: ['header:X-Vendor-Session:{token}'] });
    assert.equal(guessed.code, 0, guessed.text);
    assert.equal(guessed.discovery!.result, 'found');
    assert.equal(await proxiedStatus(v, guessed.discovery!.attachYaml!), 200);
  });

  // The product's own simulator names the place in its 401 body: `missing token: expected in header x-vendor-session: <token>`.
  const hinted: Array<[string, TokenPresentation, string]> = [
    ['a header outside every list', { in: 'header', name: 'x-vendor-session', scheme: undefined, requireApiKey: false }, 'x-vendor-session: {token}'],
    ['a header with its own scheme', { in: 'header', name: 'x-session', scheme: 'Session', requireApiKey: false }, 'x-session: Session {token}'],
    ['a query parameter', { in: 'query', name: 'sid', scheme: undefined, requireApiKey: false }, '?sid={token}'],
  ];
  for (const [name, tokenIn, found] of hinted) {
    it(`the simulator's body hint (${name}) is tried first: found`, async (t) => {
      const sim = createB2bSimulator({ apiKey: CREDENTIALS.apiKey, password: CREDENTIALS.password, ttlSeconds: 900, tls, tokenIn });
      const { url } = await sim.start();
      t.after(() => sim.stop());
      const out = await doctor({ config: configFor({ url } as Vendor), probe: '/pub/b2b/v1/objects/demo-object', discoverAttach: true });
      assert.equal(out.discovery!.result, 'found', out.text);
      assert.equal(out.code, 0, out.text);
      assert.equal(out.discovery!.tried![0]!.label, `${found} without ApiKey`, JSON.stringify(out.discovery!.tried));
    });
  }

  it('reads a place and its scheme from a body that names them with a placeholder', () => {
    assert.deepEqual(placesNamedIn('missing token: expected in header x-vendor-session: <token>'), [{ in: 'header', name: 'x-vendor-session', value: '{token}' }]);
    assert.deepEqual(placesNamedIn('expected in header Authorization: Session <token> and header ApiKey'), [{ in: 'header', name: 'Authorization', value: 'Session {token}' }]);
    assert.deepEqual(placesNamedIn('missing token: expected in query parameter sid=<token>'), [{ in: 'query', name: 'sid', value: '{token}' }]);
    assert.deepEqual(placesNamedIn('expected in header Authorization: Basic <token>; header ApiKey: <token>'), []);
  });

  it('--try with two guesses the service both accepts: ambiguous, exit 1, both listed', async (t) => {
    const v = await vendor(t, VENDORS.twoWays);
    const out = await doctor({ config: configFor(v, { token: { attach: [{ in: 'header', name: 'X-Nothing', value: '{token}' }] } }), probe: PROBE, try: ['header:X-Auth-Token:{token}', 'header:Authorization:Bearer {token}'] });
    assert.equal(out.code, 1);
    assert.equal(out.discovery!.result, 'ambiguous');
    assert.deepEqual(out.discovery!.accepted, ['X-Auth-Token: {token}', 'Authorization: Bearer {token}']);
  });

  it('paces its requests (a few per second by default) and never sends more than the budget', async (t) => {
    const v = await vendor(t, VENDORS.outside);
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    assert.ok(out.sleeps.length > 0 && out.sleeps.every((ms) => ms === 250), `${out.sleeps.slice(0, 3)}`);
    const oneRun = discoveryRequests(v).length / 2;
    assert.ok(oneRun <= 1 + MAX_DISCOVERY_REQUESTS, `${oneRun}`);
  });

  it('sends the ApiKey only where it is needed: never in the baseline, and only after a presentation failed without it', async (t) => {
    const withKey = (v: Vendor) => discoveryRequests(v).filter((r) => r.headers.apikey !== undefined).length;
    // spring takes the token without the ApiKey: one request adds the key, to check the block as pasted.
    const spring = await vendor(t, VENDORS.spring);
    const found = await doctor({ config: configFor(spring), probe: PROBE, discoverAttach: true });
    assert.equal(found.discovery!.result, 'found');
    assert.equal(withKey(spring), 2 * 2, 'per run: the probe step (token.attach carries it) and the block\'s check');
    assert.deepEqual(found.discovery!.tried!.map((tr) => tr.label), ['X-Access-Token: {token} without ApiKey', 'X-Access-Token: {token} + ApiKey']);
    // bare401 wants the ApiKey too: every presentation is tried without it first, then with it until one passes.
    const bare = await vendor(t, VENDORS.bare401);
    const needed = await doctor({ config: configFor(bare), probe: PROBE, discoverAttach: true });
    assert.equal(needed.discovery!.result, 'found');
    assert.deepEqual(needed.discovery!.attach!.map((a) => a.name), ['AuthToken', 'ApiKey']);
    const tried = needed.discovery!.tried!;
    const firstWithKey = tried.findIndex((tr) => tr.label.endsWith('+ ApiKey'));
    assert.ok(tried.slice(0, firstWithKey).every((tr) => tr.label.endsWith('without ApiKey')) && firstWithKey === 16, tried.map((tr) => tr.label).join('\n'));
    const perRun = withKey(bare) / 2;
    assert.equal(perRun, 1 + (tried.length - firstWithKey) + 1, 'the probe, the presentations up to the one found, and its decoy');
    const baselines = discoveryRequests(bare).filter((r) => r.headers.apikey === undefined && r.headers.authtoken === undefined && !/AuthToken/.test(r.headers.cookie ?? ''));
    assert.ok(baselines.length >= 4, 'the baselines carry no ApiKey');
  });

  const halts: Array<[status: number, result: string, headers: Record<string, string>]> = [[429, 'rate-limited', { 'Retry-After': '120' }], [423, 'locked', {}]];
  for (const [status, result, headers] of halts) {
    it(`stops at the first ${status} and reports ${result} with how many requests were sent`, async (t) => {
      // Like spring, but the named header is answered ${status}: the first presentation tried.
      const v = await vendor(t, (p) => (p.header('X-Access-Token') !== undefined
        ? { status, headers, body: { message: status === 423 ? 'ApiKey locked after failed attempts' : 'too many requests' } }
        : { status: 400, body: { message: "Required request header 'X-Access-Token' for method parameter type String is not present" } }));
      const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
      assert.equal(out.code, 1);
      assert.equal(out.discovery!.result, result);
      assert.equal(out.discovery!.ok, false);
      assert.match(out.discovery!.detail, new RegExp(`^${result}: GET \\S+ answered ${status}${status === 429 ? ' \\(Retry-After: 120\\)' : ''}: .*; discovery stopped at once \\(3 requests sent\\)$`));
      assert.match(out.discovery!.hint!, status === 423 ? /unlock/ : /slow down/);
      // Per run: the probe step, two baselines, and the one answered ${status}; nothing after it.
      assert.equal(discoveryRequests(v).length, 2 * 4);
      assert.equal(out.discovery!.tried!.at(-1)!.status, status);
    });
  }

  it('haltOf: 423 locks, 429 and a refusal with Retry-After rate-limit, a 2xx with Retry-After does not stop', () => {
    assert.equal(haltOf({ status: 423 }), 'locked');
    assert.equal(haltOf({ status: 429 }), 'rate-limited');
    assert.equal(haltOf({ status: 503, retryAfter: '30' }), 'rate-limited');
    assert.equal(haltOf({ status: 401, retryAfter: 'Fri, 27 Nov 2026 09:00:00 GMT' }), 'rate-limited');
    assert.equal(haltOf({ status: 200, retryAfter: '5' }), undefined);
    assert.equal(haltOf({ status: 503 }), undefined);
    assert.equal(haltOf({ status: 401 }), undefined);
  });

  it('does not start when the probe itself is answered 429 with Retry-After', async (t) => {
    const v = await vendor(t, () => ({ status: 429, headers: { 'Retry-After': '60' }, body: { message: 'slow down' } }));
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    assert.equal(out.code, 1);
    const probe = out.steps.find((s) => s.step === 'probe')!;
    assert.match(probe.detail, /→ 429: slow down \(Retry-After: 60\)/);
    assert.equal(out.discovery!.result, 'rate-limited');
    assert.match(out.discovery!.detail, /discovery not started \(0 requests sent\)/);
    assert.equal(discoveryRequests(v).length, 2, 'the probe alone, per run');
  });

  it('an echoing vendor: neither the real token nor the unknown one shows in any excerpt', async (t) => {
    // Every refusal quotes what was presented, as debug builds and gateways do.
    const v = await vendor(t, (p, req) => (p.issued(p.header('X-Token'))
      ? undefined
      : { status: 401, body: { message: `invalid credentials: ${JSON.stringify({ authorization: req.headers.authorization, token: req.headers.token, url: req.url, cookie: req.headers.cookie, xauth: req.headers['x-auth-token'] })}` } }));
    const out = await doctor({ config: configFor(v), probe: PROBE, discoverAttach: true });
    assert.equal(out.discovery!.result, 'found', out.text);
    const printed = out.text + JSON.stringify(out.steps);
    assertNoSecrets(printed, v);
    // The unknown tokens are the presented values the vendor never issued: scrubbed too.
    const presented = discoveryRequests(v).flatMap((r) => [r.headers.authorization?.replace(/^(Bearer|Token) /, ''), r.headers.token, r.headers['x-auth-token']]).filter((x): x is string => typeof x === 'string');
    const decoys = [...new Set(presented.filter((x) => !v.tokens.includes(x)))];
    assert.ok(decoys.length >= 2, 'one decoy per doctor run');
    for (const decoy of decoys) {
      assert.ok(!printed.includes(decoy), `the unknown token ${decoy} was printed`);
      for (const real of v.tokens) assert.equal(decoy.length, real.length, 'the same length as the real token');
    }
    assert.match(printed, /\[REDACTED\]/, 'the echoes were there and were scrubbed');
  });

  it('refuses a malformed --try, and --try without --probe, with exit 2', async () => {
    for (const args of [{ probe: PROBE, try: ['header:X-Token'] }, { probe: PROBE, try: ['header:X-Token:{apiKey}'] }, { try: ['header:X:{token}'] }]) {
      const run = captureIo({});
      assert.equal(await doctorCommand({ config: '/nonexistent.yaml', ...args }, run.io), 2, JSON.stringify(args));
      assert.match(run.stderr(), /--try/);
    }
  });
});

describe('discovery helpers', () => {
  it('reads header names from error bodies (Spring, quoted names, X- names) but never the ApiKey', () => {
    assert.deepEqual(headersNamedIn("Required request header 'X-Access-Token' for method parameter type String is not present"), ['X-Access-Token']);
    assert.deepEqual(headersNamedIn('missing "AuthToken" header'), ['AuthToken']);
    assert.deepEqual(headersNamedIn('send your token in X-Session-Token; header \'ApiKey\' is fine'), ['X-Session-Token']);
  });

  it('an unknown token has the real one\'s length and alphabet, and nothing else of it: random, not derived', () => {
    const base64url = 'Ab9z_Z-09xYq3LmN0pQrStUvWxYz012345678_-AbCd';
    const hex = '0f3a9c5e7b1d2f4a6c8e0b2d4f6a8c0e';
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U';
    for (const real of [base64url, hex, jwt]) {
      const alphabet = new Set(real.replace(/\./g, ''));
      const a = unknownToken(real);
      const b = unknownToken(real);
      assert.equal(a.length, real.length);
      assert.notEqual(a, real);
      assert.notEqual(a, b, 'drawn anew each time');
      assert.deepEqual([...a].map((c, i) => (c === '.') === (real[i] === '.')), [...a].map(() => true), 'a JWT keeps its three parts');
      if (real === hex) assert.match(a, /^[0-9a-f]+$/, 'hex stays hex');
      else assert.ok([...a].every((c) => c === '.' || /[A-Za-z0-9_-]/.test(c)), a);
      assert.ok(alphabet.size > 1);
    }
    // The old decoy (each character moved on by one) gave the real token back to anyone who read it.
    assert.notEqual(unknownToken('Ab9z_Z-09'), 'Bc0a_A-10');
    // With the random source fixed, two different tokens of one alphabet give the same decoy: nothing of the token is in it.
    const first = () => 0;
    assert.equal(unknownToken('k3Jd9sL2pQ', first), '0000000000');
    assert.equal(unknownToken('Zz01aBcDeF', first), '0000000000');
  });

  it('parses --try guesses of each kind, with colons in the value', () => {
    assert.deepEqual(parseTry('header:Authorization:Bearer {token}'), { in: 'header', name: 'Authorization', value: 'Bearer {token}' });
    assert.deepEqual(parseTry('query:access_token:{token}'), { in: 'query', name: 'access_token', value: '{token}' });
    assert.deepEqual(parseTry('cookie:sid:v1:{token}'), { in: 'cookie', name: 'sid', value: 'v1:{token}' });
    assert.equal(typeof parseTry('body:x:{token}'), 'string');
  });
});
