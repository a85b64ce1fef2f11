import { singleCredentials } from '../helpers/single-credentials.js';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { EXIT_USAGE } from '../../src/commands/exit-codes.js';
import { schemaAt } from '../../src/config/walk.js';
import { loadConfig } from '../../src/config/load-config.js';
import { DEFAULT_READY_WITHOUT_TOKEN_AFTER_MS } from '../../src/observability/systemd-notify.js';

/**
 * deploy/systemd/b2b-sidecar.service: `systemd-analyze verify` where the tool exists (Debian's
 * systemd package), and always a parse of the directives the deployment relies on.
 */
const UNIT = new URL('../../deploy/systemd/b2b-sidecar.service', import.meta.url);
const unitText = readFileSync(UNIT, 'utf8');
const dir = mkdtempSync(join(tmpdir(), 'b2b-systemd-'));
after(() => rmSync(dir, { recursive: true, force: true }));

type Unit = Map<string, Map<string, string[]>>;

/** systemd's unit syntax: [Section], Key=Value (repeatable), # and ; comments, `\` continuations. */
function parseUnit(text: string): Unit {
  const unit: Unit = new Map();
  let section: Map<string, string[]> | undefined;
  let pending = '';
  for (const raw of text.split('\n')) {
    const line = pending + raw.trim();
    if (line.endsWith('\\')) {
      pending = `${line.slice(0, -1)} `;
      continue;
    }
    pending = '';
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = new Map();
      unit.set(header[1]!, section);
      continue;
    }
    const eq = line.indexOf('=');
    assert.ok(section && eq > 0, `not a Key=Value line in a section: ${line}`);
    const key = line.slice(0, eq).trim();
    section.set(key, [...(section.get(key) ?? []), line.slice(eq + 1).trim()]);
  }
  return unit;
}

const unit = parseUnit(unitText);
const service = unit.get('Service') ?? new Map<string, string[]>();
const values = (key: string) => service.get(key) ?? [];
const value = (key: string) => {
  const all = values(key);
  assert.equal(all.length, 1, `[Service] ${key}= must be set exactly once`);
  return all[0]!;
};

/** Seconds of a systemd time span such as 45, 45s, 1min 30s. */
function seconds(span: string): number {
  const units: Record<string, number> = { '': 1, s: 1, sec: 1, m: 60, min: 60, h: 3600 };
  let total = 0;
  for (const [, n, u] of span.matchAll(/(\d+(?:\.\d+)?)\s*([a-z]*)/g)) {
    assert.ok(u! in units, `unknown time unit in ${span}`);
    total += Number(n) * units[u!]!;
  }
  return total;
}

function hasCommand(cmd: string): boolean {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

describe('systemd unit', () => {
  it('passes systemd-analyze verify (where systemd-analyze is installed)', (t) => {
    if (!hasCommand('systemd-analyze')) {
      t.diagnostic('systemd-analyze not installed: only the parse checks below ran');
      return;
    }
    // verify insists that ExecStart's binary exists; in the copy it is this node. The real binary
    // is checked by scripts/pack-smoke.sh, which installs the packed tarball with npm install -g.
    const copy = join(dir, 'b2b-sidecar.service');
    writeFileSync(copy, unitText.replace(/^ExecStart=\S+/m, `ExecStart=${process.execPath}`));
    const result = spawnSync('systemd-analyze', ['verify', copy], { encoding: 'utf8' });
    const about = `${result.stdout}${result.stderr}`.split('\n').filter((l) => l.includes('b2b-sidecar'));
    assert.deepEqual(about, [], 'systemd-analyze verify complaints about the unit');
    assert.equal(result.status, 0, result.stderr);
  });

  it('starts the CLI where Debian\'s npm install -g puts it (prefix /usr) with run --config /etc/b2b-sidecar/sidecar.yaml', () => {
    assert.equal(value('ExecStart'), '/usr/bin/b2b-sidecar run --config /etc/b2b-sidecar/sidecar.yaml');
    assert.deepEqual(unit.get('Unit')?.get('Documentation'), ['file:/usr/lib/node_modules/b2b-sidecar/README.md']);
  });

  it('suggests no install path under a home directory, which ProtectHome=yes hides from the service', () => {
    assert.equal(value('ProtectHome'), 'yes');
    const comments = unitText.split('\n').filter((l) => l.startsWith('#')).join(' ');
    for (const m of comments.matchAll(/(~\/|\/home\/|\/root\/)\S*/g)) {
      // Only ever named as a place that does not work.
      const around = comments.slice(Math.max(0, m.index - 200), m.index + 200);
      assert.match(around, /ProtectHome=yes hides/, `a home path offered as an install location: ${m[0]}`);
    }
  });

  it('passes the credentials with LoadCredential= and points the *_FILE env vars at the copies', () => {
    assert.deepEqual(values('LoadCredential').sort(), ['api-key:/etc/b2b-sidecar/api-key', 'password:/etc/b2b-sidecar/password']);
    const env = values('Environment');
    const apiKeyEnv = schemaAt(['credentials', 'apiKeyFile'])?.['x-env'];
    const passwordEnv = schemaAt(['credentials', 'passwordFile'])?.['x-env'];
    assert.ok(env.includes(`${apiKeyEnv}=%d/api-key`), `Environment=${apiKeyEnv}=%d/api-key`);
    assert.ok(env.includes(`${passwordEnv}=%d/password`), `Environment=${passwordEnv}=%d/password`);
  });

  it('documents a doctor line with the unit\'s own credentials, which doctor finds in $CREDENTIALS_DIRECTORY', async () => {
    const doc = unitText.split('\n').filter((l) => l.startsWith('#')).join(' ').replace(/\\\s*#\s*/g, ' ');
    const line = /systemd-run [^\n]*?b2b-sidecar doctor --config (\S+)/.exec(doc);
    assert.ok(line, 'a systemd-run … doctor line in the unit\'s comments');
    assert.equal(line[1], '/etc/b2b-sidecar/sidecar.yaml');
    const documented = [...line[0].matchAll(/LoadCredential=(\S+)/g)].map((m) => m[1]!).sort();
    assert.deepEqual(documented, values('LoadCredential').sort());
    // What systemd-run hands over: the config installed as the unit's comment says (the shipped
    // example, whose credential files are not where systemd puts its copies) and the copies.
    const credentials = join(dir, 'credentials');
    mkdirSync(credentials, { recursive: true });
    for (const entry of documented) writeFileSync(join(credentials, entry.split(':')[0]!), `value-of-${entry.split(':')[0]}-123`);
    const config = new URL('../../config/sidecar.example.yaml', import.meta.url).pathname;
    const loaded = await loadConfig(config, { CREDENTIALS_DIRECTORY: credentials });
    assert.equal(singleCredentials(loaded).apiKeyFile, join(credentials, 'api-key'));
    assert.equal(singleCredentials(loaded).passwordFile, join(credentials, 'password'));
  });

  it('reloads with SIGHUP, stops with SIGTERM and restarts on failure but not on a bad config', () => {
    assert.equal(value('ExecReload'), '/bin/kill -HUP $MAINPID');
    assert.equal(value('KillSignal'), 'SIGTERM');
    assert.equal(value('Restart'), 'on-failure');
    assert.ok(value('RestartPreventExitStatus').split(/\s+/).includes(String(EXIT_USAGE)), 'exit 2 (invalid configuration) is not retried');
  });

  it('gives the drain time to finish before systemd sends SIGKILL', async () => {
    // The unit is meant for config/sidecar.example.yaml; load it with stand-in credential files.
    writeFileSync(join(dir, 'api-key'), 'k\n');
    writeFileSync(join(dir, 'password'), 'p\n');
    const config = await loadConfig(new URL('../../config/sidecar.example.yaml', import.meta.url).pathname, {
      B2B_API_KEY_FILE: join(dir, 'api-key'),
      B2B_PASSWORD_FILE: join(dir, 'password'),
    });
    const stop = seconds(value('TimeoutStopSec'));
    const drain = config.shutdown.delaySeconds + config.shutdown.timeoutSeconds;
    assert.ok(stop > drain, `TimeoutStopSec (${stop}s) must exceed shutdown.delaySeconds + timeoutSeconds (${drain}s)`);
  });

  it('is hardened: dynamic user, read-only system, no capabilities, syscall and address-family filters', () => {
    const expected: Record<string, string> = {
      DynamicUser: 'yes',
      ProtectSystem: 'strict',
      ProtectHome: 'yes',
      PrivateTmp: 'yes',
      NoNewPrivileges: 'yes',
      CapabilityBoundingSet: '',
      RestrictAddressFamilies: 'AF_INET AF_INET6 AF_UNIX',
      SystemCallFilter: '@system-service',
      // V8's JIT needs executable memory it writes at run time.
      MemoryDenyWriteExecute: 'no',
    };
    for (const [key, want] of Object.entries(expected)) assert.equal(value(key), want, `${key}=`);
  });

  it('is Type=notify: started on READY=1 (sent by a systemd-notify child, hence NotifyAccess=all), within a start timeout longer than the 60 s after which the sidecar sends it without a token', () => {
    assert.equal(value('Type'), 'notify');
    assert.equal(value('NotifyAccess'), 'all', 'the sender is a child process, not the main one');
    assert.deepEqual(values('ExecStartPost'), [], 'READY=1 already waits for the token: no `b2b-sidecar wait`');
    assert.ok(seconds(value('TimeoutStartSec')) > DEFAULT_READY_WITHOUT_TOKEN_AFTER_MS / 1000, 'the start timeout must leave the sidecar its time to send READY=1 without a token');
    assert.match(unitText, /since systemd 246/i, 'the unit says which systemd-notify it relies on');
  });

  it('has a watchdog the token loop keeps fed while live, restarting the unit when it is not', () => {
    const watchdog = seconds(value('WatchdogSec'));
    // Pinged every WatchdogSec/2: an event loop late by less than that must not cost a restart,
    // and a stuck loop must be restarted about as fast as Kubernetes' liveness probe does (30 s).
    assert.ok(watchdog >= 20 && watchdog <= 60, `WatchdogSec=${watchdog}s`);
    assert.equal(value('Restart'), 'on-failure', 'a watchdog timeout restarts the unit');
    assert.deepEqual(values('WatchdogSignal'), [], 'the default SIGABRT (LimitCORE=0: no core with the secrets in it)');
  });

  it('never dumps core: the memory holds the credentials and tokens', () => {
    assert.equal(value('LimitCORE'), '0');
  });

  it('gives the optional token.file a runtime directory writable under ProtectSystem=strict', () => {
    assert.equal(value('RuntimeDirectory'), 'b2b-sidecar');
    const tokenEnv = schemaAt(['token', 'file'])?.['x-env'];
    assert.match(unitText, new RegExp(`^#?Environment=${tokenEnv}=%t/b2b-sidecar/token$`, 'm'));
  });

  it('is enabled into multi-user.target after the network is online', () => {
    assert.deepEqual(unit.get('Install')?.get('WantedBy'), ['multi-user.target']);
    assert.deepEqual(unit.get('Unit')?.get('After'), ['network-online.target']);
  });
});
