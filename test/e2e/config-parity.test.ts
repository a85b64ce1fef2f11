import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { runCli } from '../helpers/cli.js';
import { testTls } from '../helpers/tls.js';

/**
 * Issue 13 §2/§3: `check-config` reaches the same verdict as `run`. Every bad config below goes to
 * both, as real processes of the built CLI (`npm run build` first). The listeners' ports are held
 * by this test, so a `run` that got past validation would fail to bind and exit 1: exit 2 proves
 * the config was refused before anything was bound.
 */

const dir = mkdtempSync(join(tmpdir(), 'b2b-parity-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let counter = 0;
function file(name: string, content: string | Buffer): string {
  const path = join(dir, `${counter++}-${name}`);
  // 0600, as the README asks: a config every user can read draws a warning of its own.
  writeFileSync(path, content, { mode: 0o600 });
  return path;
}

const held: Server[] = [];
let proxyPort = 0;
let adminPort = 0;
async function holdPort(): Promise<number> {
  const server = createServer();
  held.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}
before(async () => {
  proxyPort = await holdPort();
  adminPort = await holdPort();
});
after(() => held.forEach((s) => s.close()));

/** Distinctive secret values: none may appear in any output. */
const API_KEY = 'parity-api-key-4711';
const PASSWORD = 'parity-password-0815';

type Raw = Record<string, any>;
function baseConfig(): Raw {
  return {
    listen: { host: '127.0.0.1', port: proxyPort },
    admin: { host: '127.0.0.1', port: adminPort },
    service: { baseUrl: 'https://127.0.0.1:1' },
    credentials: { apiKey: API_KEY, password: PASSWORD },
  };
}

interface Case {
  name: string;
  /** Changes the base config, or gives the whole file text. */
  change?: (c: Raw) => void;
  text?: () => string;
  /** The problem line must start with this (key and env var), or match it. */
  key: string | RegExp;
  /** The reason must match. */
  reason?: RegExp;
  /** Secret text that must never be printed, besides the two credentials. */
  secret?: string;
}

const BOGUS_PEM = '-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n';
const header = (name: string, value: string) => ({ in: 'header', name, value });
const attach = (...entries: unknown[]) => (c: Raw) => { c.token = { attach: entries }; };
const guard = (g: Raw) => (c: Raw) => { c.guard = g; };

const CASES: Case[] = [
  // §2: header names and values the HTTP client would refuse at request time.
  { name: 'typographic quotes around the Authorization value', change: attach(header('Authorization', '“Bearer {token}”')), key: 'token.attach[0].value', reason: /U\+201C.*typographic quote/ },
  { name: 'a Cyrillic letter in a header value', change: attach(header('Authorization', 'Веarer {token}')), key: 'token.attach[0].value', reason: /U\+0412/ },
  { name: 'a control character in a header value', change: attach(header('Authorization', 'Bearer {token}\u0007')), key: 'token.attach[0].value', reason: /control characters/ },
  { name: 'a header name with a space', change: attach(header('Api Key', '{token}')), key: 'token.attach[0].name', reason: /not a valid header name/ },
  { name: 'a header name with a Cyrillic letter', change: attach(header('Аuthorization', 'Bearer {token}')), key: 'token.attach[0].name', reason: /U\+0410/ },
  {
    name: 'an rkObjectId a header cannot carry, substituted into a header',
    change: (c) => { c.credentials.rkObjectId = 'объект-1'; attach(header('Authorization', 'Bearer {token}'), header('X-Object', '{rkObjectId}'))(c); },
    key: 'token.attach[1].value', reason: /credentials\.rkObjectId/,
  },
  // §2: nothing would carry the token.
  { name: 'an empty attach list', change: attach(), key: 'token.attach: ', reason: /nothing would carry the token/ },
  { name: 'an empty value', change: attach(header('Authorization', 'Bearer {token}'), header('ApiKey', '')), key: 'token.attach[1].value', reason: /is empty/ },
  { name: 'no entry with {token}', change: attach(header('ApiKey', '{apiKey}')), key: 'token.attach: ', reason: /no entry has \{token\}/ },
  { name: '${token} (shell habit)', change: attach(header('Authorization', 'Bearer ${token}')), key: 'token.attach[0].value', reason: /did you mean \{token\}\?/ },
  // §2: credential files whose content run rejects, read without printing them.
  { name: 'a password file holding only whitespace', change: (c) => { c.credentials = { apiKey: API_KEY, passwordFile: file('pw', ' \n\n') }; }, key: 'credentials.passwordFile (B2B_PASSWORD_FILE)', reason: /only whitespace/ },
  { name: 'an ApiKey file with a byte-order mark', change: (c) => { c.credentials = { apiKeyFile: file('key', `\ufeff${API_KEY}\n`), password: PASSWORD }; }, key: 'credentials.apiKeyFile (B2B_API_KEY_FILE)', reason: /byte-order mark/ },
  { name: 'a password file with leading spaces', change: (c) => { c.credentials = { apiKey: API_KEY, passwordFile: file('pw', `  ${PASSWORD}\n`) }; }, key: 'credentials.passwordFile (B2B_PASSWORD_FILE)', reason: /starts with whitespace/ },
  { name: 'an ApiKey file with a non-ASCII character', change: (c) => { c.credentials = { apiKeyFile: file('key', 'parity-kéy-4712\n'), password: PASSWORD }; }, key: 'credentials.apiKeyFile (B2B_API_KEY_FILE)', reason: /visible ASCII/, secret: 'kéy-4712' },
  // §2: a CA file with PEM armour around something that is not a certificate.
  { name: 'a caFile with PEM armour around garbage', change: (c) => { c.service.caFile = file('ca.pem', BOGUS_PEM); }, key: 'service.caFile (B2B_CA_FILE)', reason: /not an X\.509 certificate/ },
  // The way out: a proxy run cannot use, half a client certificate, credentials for no proxy.
  { name: 'an https:// proxy with a password in it', change: (c) => { c.service.proxy = 'https://u:parity-proxy-secret@squid:3128'; }, key: 'service.proxy', reason: /only an http:\/\/ proxy is supported/, secret: 'parity-proxy-secret' },
  { name: 'a proxy URL with a path', change: (c) => { c.service.proxy = 'http://squid:3128/proxy'; }, key: 'service.proxy', reason: /no path, query or fragment/ },
  { name: 'a certFile without its keyFile', change: (c) => { c.service.certFile = file('client.pem', BOGUS_PEM); }, key: 'service.keyFile', reason: /is needed with service\.certFile/ },
  { name: 'a proxyAuthFile with proxy none', change: (c) => { c.service.proxy = 'none'; c.service.proxyAuthFile = file('proxy-auth', 'user:parity-proxy-pass\n'); }, key: 'service.proxyAuthFile', reason: /has no use: service\.proxy is none/, secret: 'parity-proxy-pass' },
  { name: 'a proxyAuthFile without a colon', change: (c) => { c.service.proxy = 'http://squid:3128'; c.service.proxyAuthFile = file('proxy-auth', 'just-a-password\n'); }, key: 'service.proxyAuthFile', reason: /must hold user:password/, secret: 'just-a-password' },
  // §2: listener hosts that cannot be bound.
  { name: 'listen.host in URL brackets', change: (c) => { c.listen.host = '[::1]'; }, key: 'listen.host', reason: /without brackets: ::1/ },
  { name: 'an admin.host that does not resolve', change: (c) => { c.admin.host = 'no-such-host.invalid'; }, key: 'admin.host', reason: /does not resolve/ },
  // §2: baseUrl.
  { name: 'a baseUrl ending in /pub/b2b/v1', change: (c) => { c.service.baseUrl = 'https://api.example.com/gateway/pub/b2b/v1/'; }, key: 'service.baseUrl (B2B_BASE_URL)', reason: /API root.*use https:\/\/api\.example\.com\/gateway$/ },
  { name: 'a baseUrl with an empty host', change: (c) => { c.service.baseUrl = 'https:///pub'; }, key: 'service.baseUrl (B2B_BASE_URL)', reason: /has no host/ },
  // §2: the replay buffer's upper bound.
  { name: 'a replay buffer of 10^12 bytes', change: (c) => { c.proxy = { replayBodyLimitBytes: 1e12 }; }, key: 'proxy.replayBodyLimitBytes', reason: /67108864/ },
  // §3: guard entries that cover everyone, without guard.allowAnyone.
  { name: 'guard.allow 0.0.0.0/0', change: guard({ allow: ['127.0.0.1/32', '0.0.0.0/0'] }), key: 'guard.allow[1]', reason: /guard\.allowAnyone/ },
  { name: 'guard.allow ::/0', change: guard({ allow: ['::/0'] }), key: 'guard.allow[0]', reason: /admits everyone/ },
  { name: 'guard.allow ::ffff:0:0/96 (all of IPv4, mapped)', change: guard({ allow: ['::ffff:0:0/96'] }), key: 'guard.allow[0]', reason: /admits everyone/ },
  { name: 'guard.allow an IPv4 prefix shorter than /8', change: guard({ allow: ['8.0.0.0/7'] }), key: 'guard.allow[0]', reason: /admits everyone/ },
  { name: 'guard.allow an IPv6 prefix shorter than /16', change: guard({ allow: ['2000::/3'] }), key: 'guard.allow[0]', reason: /admits everyone/ },
  { name: 'guard.trustedProxies 0.0.0.0/0', change: guard({ trustedProxies: ['0.0.0.0/0'] }), key: 'guard.trustedProxies[0]', reason: /X-Forwarded-For/ },
  // §6: YAML surprises.
  { name: 'an unquoted all-digit password', text: () => stringify(baseConfig()).replace(`password: ${PASSWORD}`, 'password: 0123456789'), key: 'credentials.password (B2B_PASSWORD)', reason: /quote it/, secret: '123456789' },
  { name: 'two YAML documents', text: () => `${stringify(baseConfig())}---\nlog: { level: debug }\n`, key: /^config file .*: holds more than one YAML document \(the "---" at line \d+ starts another\)/ },
];

/** The problem lines (`  - ...`) of an output. */
function problemLines(stderr: string): string[] {
  return stderr.split('\n').filter((l) => l.startsWith('  - ')).map((l) => l.slice(4));
}

/** Runs the cases a few at a time: two cores are shared by the whole suite. */
async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

describe('check-config and run reach the same verdict (bad-config corpus)', () => {
  it('refuses every bad config with exit 2 in both, before binding, listing the same problems by key and printing no secret', { timeout: 180_000 }, async () => {
    const failures: string[] = [];
    await inBatches(CASES, 3, async (c) => {
      const raw = baseConfig();
      c.change?.(raw);
      const path = file('sidecar.yaml', c.text ? c.text() : stringify(raw));
      const [check, run] = await Promise.all([runCli(['check-config', '--config', path]), runCli(['run', '--config', path])]);
      const output = check.stdout + check.stderr + run.stdout + run.stderr;
      const checkLines = problemLines(check.stderr);
      const runLines = problemLines(run.stderr);
      const found = checkLines.find((l) => (typeof c.key === 'string' ? l.startsWith(c.key.endsWith(': ') ? c.key : `${c.key}: `) : c.key.test(l)));
      const why = [
        check.code !== 2 && `check-config exited ${check.code}`,
        run.code !== 2 && `run exited ${run.code}`,
        !/^invalid configuration:\n {2}- /.test(check.stderr) && 'check-config output is not the problem list',
        !/^invalid configuration:\n {2}- /.test(run.stderr) && 'run output is not the problem list',
        JSON.stringify(checkLines) !== JSON.stringify(runLines) && `different problems: ${JSON.stringify(checkLines)} vs ${JSON.stringify(runLines)}`,
        !found && `no problem names ${String(c.key)}`,
        found && c.reason && !c.reason.test(found) && `reason does not match ${String(c.reason)}: ${found}`,
        /sidecar started/.test(run.stdout) && 'run started',
        [API_KEY, PASSWORD, c.secret].some((s) => s && output.includes(s)) && 'a secret was printed',
      ].filter(Boolean);
      if (why.length > 0) failures.push(`${c.name}: ${why.join('; ')}\n${check.stderr}`);
    });
    assert.deepEqual(failures, []);
  });

  it('a valid config passes check-config, and run with its proxy port taken exits 1 naming the listener and listen.port', { timeout: 30_000 }, async () => {
    const raw = baseConfig();
    raw.admin.port = 0;
    const path = file('valid.yaml', stringify(raw));
    const check = await runCli(['check-config', '--config', path]);
    assert.equal(check.code, 0, check.stderr);
    assert.equal(check.stderr, '');
    const run = await runCli(['run', '--config', path]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, new RegExp(`^error: listen\\.port \\(B2B_LISTEN_PORT\\): the proxy listener cannot listen on 127\\.0\\.0\\.1:${proxyPort} \\(listen\\.host\\): the port is already in use.*\\[EADDRINUSE\\]`));
    assert.ok(!(run.stdout + run.stderr).includes(PASSWORD));
  });

  it('an admin port in use names admin.port', { timeout: 30_000 }, async () => {
    const raw = baseConfig();
    const path = file('valid.yaml', stringify(raw));
    const run = await runCli(['run', '--config', path]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr, /^error: admin\.port \(B2B_ADMIN_PORT\): the admin listener cannot listen on .*\[EADDRINUSE\]/);
  });

  it('guard.allowAnyone: true accepts an everyone entry, and check-config says what it means', { timeout: 30_000 }, async () => {
    const raw = baseConfig();
    raw.guard = { allow: ['0.0.0.0/0', '::/0'], allowAnyone: true };
    const check = await runCli(['check-config', '--config', file('anyone.yaml', stringify(raw))]);
    assert.equal(check.code, 0, check.stderr);
    assert.equal(check.stderr, 'warning: guard.allowAnyone is true: anyone who can reach the proxy listener acts as the integrator\n');
  });
});
