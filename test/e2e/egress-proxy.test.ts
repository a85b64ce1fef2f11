import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createLocalizationSimulator } from '../../src/simulator/localization-simulator.js';
import { assertBuildIsCurrent, runCli } from '../helpers/cli.js';
import { CREDENTIALS, ENGINES, send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';
import { startSquid, startTinyproxy, type RealProxy } from '../helpers/forward-proxies.js';

/**
 * The egress proxy against a real forward proxy: Debian's tinyproxy 1.11 (CONNECT, Basic
 * authentication, ConnectPort rules), as on the hosts whose only way out is a corporate proxy.
 * Node itself ignores HTTPS_PROXY (docs/traps.md T38).
 */
const USER = 'sidecar';
const PASSWORD = 'proxy-pa55word-7f3e9c';
const dir = mkdtempSync(join(tmpdir(), 'b2b-egress-'));
let files = 0;
/** Every line any sidecar, command or log wrote in this file: the proxy password must be in none. */
const outputs: string[] = [];

function writeFile(name: string, text: string): string {
  const file = join(dir, `${++files}-${name}`);
  writeFileSync(file, text, { mode: 0o600 });
  return file;
}

async function configFile(baseUrl: string, service: string, extra = ''): Promise<string> {
  const tls = await testTls();
  return writeFile('sidecar.yaml', `service:\n  baseUrl: ${baseUrl}\n  caFile: ${tls.caFile}\n  tokenTimeoutMs: 5000\n${service}credentials:\n  apiKey: ${CREDENTIALS.apiKey}\n  password: ${CREDENTIALS.password}\n${extra}`);
}

function hostPort(url: string): string {
  return new URL(url).host;
}

describe('egress through a real forward proxy (tinyproxy)', () => {
  let sim: Awaited<ReturnType<typeof startSimulator>>;
  let open: RealProxy;
  let authed: RealProxy;
  let portRules: RealProxy;
  before(async () => {
    assertBuildIsCurrent();
    sim = await startSimulator();
    [open, authed, portRules] = await Promise.all([
      startTinyproxy(),
      startTinyproxy({ auth: { user: USER, password: PASSWORD } }),
      startTinyproxy({ connectPorts: [443] }),
    ]);
  });
  after(async () => {
    const all = [...outputs, open.log(), authed.log(), portRules.log()].join('\n');
    await Promise.all([sim.stop(), open.stop(), authed.stop(), portRules.stop()]);
    assert.ok(!all.includes(PASSWORD), 'the proxy password appeared in an output');
    assert.ok(!all.includes(Buffer.from(`${USER}:${PASSWORD}`).toString('base64')), 'the Basic credentials appeared in an output');
  });

  for (const engine of ENGINES) {
    it(`${engine}: gentoken and proxied requests go through the authenticating proxy, TLS end to end`, async () => {
      const before = authed.connects().length;
      const s = await startSidecar({
        baseUrl: sim.baseUrl, engine,
        overrides: { service: { proxy: `http://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${authed.port}` } },
      });
      try {
        await waitReady(s);
        const answer = await send(s.port, { path: '/pub/b2b/v1/echo' });
        assert.equal(answer.status, 200);
        const connects = authed.connects().slice(before);
        // The token client's pool and the engine's pool each opened a tunnel to the service.
        assert.ok(connects.length >= 2, `CONNECTs seen: ${connects.join(', ')}`);
        assert.ok(connects.every((c) => c === hostPort(sim.baseUrl)), connects.join(', '));
        const started = s.log.lines().find((l) => l.message === 'sidecar started');
        assert.deepEqual(started?.egress, { service: `via proxy http://***:***@127.0.0.1:${authed.port} (service.proxy)` });
        const metrics = await s.sidecar.registry.metrics();
        assert.match(metrics, /^b2b_sidecar_egress_proxy_failures_total\{route="service",reason="auth"\} 0$/m);
        outputs.push(s.log.text(), metrics, answer.body.toString());
      } finally {
        await s.stop();
      }
    });
  }

  it('HTTPS_PROXY from the environment is used, and NO_PROXY bypasses it', async () => {
    const before = open.connects().length;
    const viaEnv = await startSidecar({ baseUrl: sim.baseUrl, env: { HTTPS_PROXY: open.url } });
    try {
      await waitReady(viaEnv);
      assert.equal((await send(viaEnv.port, { path: '/pub/b2b/v1/echo' })).status, 200);
      assert.ok(open.connects().length > before, 'no CONNECT through the HTTPS_PROXY');
      assert.match(JSON.stringify(viaEnv.log.lines().find((l) => l.message === 'sidecar started')?.egress), /via proxy http:\/\/127\.0\.0\.1:\d+ \(HTTPS_PROXY\)/);
    } finally {
      await viaEnv.stop();
    }
    const counted = open.connects().length;
    const bypassed = await startSidecar({ baseUrl: sim.baseUrl, env: { HTTPS_PROXY: open.url, NO_PROXY: `example.com,${new URL(sim.baseUrl).hostname}` } });
    try {
      await waitReady(bypassed);
      assert.equal((await send(bypassed.port, { path: '/pub/b2b/v1/echo' })).status, 200);
      assert.equal(open.connects().length, counted, 'NO_PROXY did not bypass the proxy');
      assert.match(JSON.stringify(bypassed.log.lines().find((l) => l.message === 'sidecar started')?.egress), /direct \(.* is in NO_PROXY\)/);
    } finally {
      await bypassed.stop();
    }
  });

  it('the token command reaches gentoken through the proxy; a wrong proxy password gives the proxy-authentication message (tinyproxy answers 401)', async () => {
    const good = await configFile(sim.baseUrl, `  proxy: http://127.0.0.1:${authed.port}\n  proxyAuthFile: ${writeFile('proxy-auth', `${USER}:${PASSWORD}\n`)}\n`);
    const before = authed.connects().length;
    const ok = await runCli(['token', '--config', good]);
    outputs.push(ok.stdout, ok.stderr);
    assert.equal(ok.code, 0, ok.stderr);
    assert.ok(ok.stdout.trim().length > 10);
    assert.deepEqual(authed.connects().slice(before), [hostPort(sim.baseUrl)]);

    const wrong = await configFile(sim.baseUrl, `  proxy: http://${USER}:not-the-password@127.0.0.1:${authed.port}\n`);
    const denied = await runCli(['token', '--config', wrong]);
    outputs.push(denied.stdout, denied.stderr);
    assert.equal(denied.code, 1);
    assert.match(denied.stderr, /the egress proxy http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:\d+ \(service\.proxy\) refused the tunnel: 401 proxy authentication failed \(check the user and password in the proxy URL or proxyAuthFile\)/);
    assert.ok(!denied.stderr.includes('not-the-password'), denied.stderr);
  });

  it('squid: gentoken through it with the right password, the 407 message with a wrong one', async () => {
    const squid = await startSquid({ user: USER, password: PASSWORD });
    try {
      const good = await runCli(['token', '--config', await configFile(sim.baseUrl, `  proxy: ${squid.url}\n  proxyAuthFile: ${writeFile('proxy-auth', `${USER}:${PASSWORD}`)}\n`)]);
      outputs.push(good.stdout, good.stderr);
      assert.equal(good.code, 0, good.stderr);
      const wrong = await runCli(['token', '--config', await configFile(sim.baseUrl, '')], { HTTPS_PROXY: `http://${USER}:wrong-one@127.0.0.1:${squid.port}` });
      outputs.push(wrong.stdout, wrong.stderr);
      assert.equal(wrong.code, 1);
      assert.match(wrong.stderr, /the egress proxy http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:\d+ \(HTTPS_PROXY\) refused the tunnel: 407 proxy authentication failed/);
      const noCredentials = await runCli(['token', '--config', await configFile(sim.baseUrl, `  proxy: ${squid.url}\n`)]);
      assert.match(noCredentials.stderr, /refused the tunnel: 407 proxy authentication required \(set the user and password/);
      // Squid logs a tunnel when it ends: the successful one, with the user it authenticated.
      const tunnel = new RegExp(`TCP_TUNNEL/200 .* CONNECT ${hostPort(sim.baseUrl).replace(/\./g, '\\.')} ${USER} `);
      for (let i = 0; i < 100 && !tunnel.test(squid.log()); i++) await new Promise((r) => setTimeout(r, 50));
      assert.match(squid.log(), tunnel);
      outputs.push(squid.log());
    } finally {
      await squid.stop();
    }
  });

  it('doctor shows the egress path and checks the CONNECT step before TLS', async () => {
    const config = await configFile(sim.baseUrl, '', '');
    const ok = await runCli(['doctor', '--config', config], { HTTPS_PROXY: `http://${USER}:${PASSWORD}@127.0.0.1:${authed.port}` });
    outputs.push(ok.stdout, ok.stderr);
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
    assert.match(ok.stdout, new RegExp(`✓ connect: via proxy http://\\*\\*\\*:\\*\\*\\*@127\\.0\\.0\\.1:${authed.port} \\(HTTPS_PROXY\\): CONNECT ${new URL(sim.baseUrl).hostname}:${new URL(sim.baseUrl).port} established; TLS chain trusted`));
    assert.match(ok.stdout, /✓ gentoken/);

    // A proxy whose rules allow CONNECT to port 443 only refuses the service's port.
    const refused = await runCli(['doctor', '--config', await configFile(sim.baseUrl, `  proxy: ${portRules.url}\n`)]);
    outputs.push(refused.stdout, refused.stderr);
    assert.equal(refused.code, 1);
    assert.match(refused.stdout, /✗ connect: via proxy http:\/\/127\.0\.0\.1:\d+ \(service\.proxy\): the egress proxy .* refused CONNECT .* with 403/);
    assert.match(refused.stdout, /hint: the proxy does not allow a tunnel to this host and port/);
    assert.ok(portRules.connects().includes(hostPort(sim.baseUrl)), 'the refusing proxy saw no CONNECT');

    // Nothing listens at the proxy address.
    const nowhere = await runCli(['doctor', '--config', await configFile(sim.baseUrl, '  proxy: http://127.0.0.1:9\n')]);
    outputs.push(nowhere.stdout, nowhere.stderr);
    assert.equal(nowhere.code, 1);
    assert.match(nowhere.stdout, /✗ connect: via proxy http:\/\/127\.0\.0\.1:9 \(service\.proxy\): the egress proxy .* is unreachable \(ECONNREFUSED\)/);
  });

  it('the translation command reaches the localization server through localization.proxy', async () => {
    const tls = await testTls();
    const l10n = createLocalizationSimulator({ tls, token: 'wlu_proxied7oken1a2b3c4d' });
    const { url } = await l10n.start();
    try {
      const before = open.connects().length;
      const config = await configFile(sim.baseUrl, '', `localization:\n  baseUrl: ${url}\n  caFile: ${tls.caFile}\n  token: wlu_proxied7oken1a2b3c4d\n  proxy: ${open.url}\n`);
      const out = await runCli(['translation', 'demo/web/en', '--config', config]);
      outputs.push(out.stdout, out.stderr);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /^Translation demo\/web\/en$/m);
      assert.deepEqual(open.connects().slice(before), [hostPort(url)]);
    } finally {
      await l10n.stop();
    }
  });

  for (const engine of ENGINES) {
    it(`${engine}: the /l10n route reaches the localization server through localization.proxy, the service directly`, async () => {
      const tls = await testTls();
      const l10n = createLocalizationSimulator({ tls, token: 'wlu_route7oken1a2b3c4d' });
      const { url } = await l10n.start();
      const before = open.connects();
      const s = await startSidecar({
        baseUrl: sim.baseUrl, engine,
        overrides: { service: { proxy: 'none' }, localization: { baseUrl: url, caFile: tls.caFile, token: 'wlu_route7oken1a2b3c4d', proxy: open.url } },
        env: { HTTPS_PROXY: 'http://127.0.0.1:9' }, // 'none' wins over the environment for the service
      });
      try {
        await waitReady(s);
        const answer = await send(s.port, { path: '/l10n/api/translations/demo/web/en/' });
        assert.equal(answer.status, 200, answer.body.toString());
        assert.equal(answer.json<{ language_code: string }>().language_code, 'en');
        assert.deepEqual(open.connects().slice(before.length), [hostPort(url)]);
        assert.equal((await send(s.port, { path: '/pub/b2b/v1/echo' })).status, 200);
        const started = s.log.lines().find((l) => l.message === 'sidecar started');
        assert.deepEqual(started?.egress, { service: 'direct (service.proxy is none)', localization: `via proxy ${open.url} (localization.proxy)` });
      } finally {
        await s.stop();
        await l10n.stop();
      }
    });
  }

  for (const engine of ENGINES) {
  it(`${engine}: a proxied request whose tunnel fails gets a 502 naming the proxy, and the failure is counted`, async () => {
    const s = await startSidecar({ baseUrl: sim.baseUrl, engine, overrides: { service: { proxy: open.url } } });
    try {
      await waitReady(s);
      // The proxy goes away: new connections cannot be tunnelled.
      await open.stop();
      // Its tunnels closed with it, so the request needs a new one (a retry on a fresh connection too).
      const second = await send(s.port, { path: '/pub/b2b/v1/echo' });
      outputs.push(s.log.text());
      assert.equal(second.status, 502);
      assert.ok(s.log.lines().some((l) => l.message === 'egress proxy failed' && l.route === 'service'), 'the proxy failure is logged');
      assert.match(second.json<{ message: string }>().message, /the egress proxy http:\/\/127\.0\.0\.1:\d+ \(service\.proxy\) (is unreachable|closed)/);
      assert.match(await s.sidecar.registry.metrics(), /^b2b_sidecar_egress_proxy_failures_total\{route="service",reason="(unreachable|closed)"\} [1-9]/m);
    } finally {
      await s.stop();
      open = await startTinyproxy();
    }
  });
  }
});
