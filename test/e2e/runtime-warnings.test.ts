import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { runCli, spawnCli } from '../helpers/cli.js';
import { CREDENTIALS, ENGINES, startSimulator } from '../helpers/stack.js';
import { testTls } from '../helpers/tls.js';

/**
 * No command prints a deprecation warning on any supported Node line: the pinned release
 * (.node-version) and the other lines CI tests (`.ci/run`), each binary found or installed by
 * scripts/ensure-node.sh. A warning on stderr is noise an operator's log alerting picks up, and
 * names an API the next Node line removes (http-proxy 1.18.1 printed DEP0060 and DEP0169 on the
 * first proxied request). `--pending-deprecation` shows the warnings Node only announces so far.
 */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PINNED = readFileSync(join(ROOT, '.node-version'), 'utf8').trim();
const OTHERS = /OTHER_NODES=\(([^)]*)\)/.exec(readFileSync(join(ROOT, '.ci/run'), 'utf8'))?.[1]?.trim().split(/\s+/) ?? [];
const WARNING = /DeprecationWarning|\bDEP0\d{3}\b/;
const ENV = { NODE_OPTIONS: '--pending-deprecation' };
const work = mkdtempSync(join(tmpdir(), 'b2b-runtime-warnings-'));
after(() => rmSync(work, { recursive: true, force: true }));

function nodeBinary(version: string): string {
  const bin = execFileSync('bash', [join(ROOT, 'scripts/ensure-node.sh'), version], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  return join(bin, 'node');
}

async function configFile(baseUrl: string, engine: string): Promise<string> {
  const file = join(work, `sidecar-${engine}.yaml`);
  writeFileSync(file, [
    'listen: { host: 127.0.0.1, port: 0 }',
    'admin: { host: 127.0.0.1, port: 0 }',
    `service: { baseUrl: "${baseUrl}", caFile: "${(await testTls()).caFile}" }`,
    `credentials: { apiKey: "${CREDENTIALS.apiKey}", password: "${CREDENTIALS.password}", rkObjectId: "${CREDENTIALS.rkObjectId}" }`,
    `proxy: { engine: ${engine} }`,
    'shutdown: { delaySeconds: 0, timeoutSeconds: 5 }',
  ].join('\n'));
  return file;
}

describe('no deprecation warning on any supported Node line', () => {
  assert.ok(OTHERS.length >= 2, '.ci/run names the other Node lines it tests');
  for (const version of [PINNED, ...OTHERS]) {
    it(`Node ${version}: run on both engines proxying a GET and a POST, demo, token, check-config, --version`, async () => {
      const node = nodeBinary(version);
      assert.equal(execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim(), version);
      const sim = await startSimulator();
      try {
        for (const engine of ENGINES) {
          const file = await configFile(sim.baseUrl, engine);
          const p = spawnCli(['run', '--config', file], ENV, node);
          try {
            const port = (await p.waitFor(/"listen":"127\.0\.0\.1:(\d+)"/))[1];
            await p.waitFor(/token obtained/);
            const get = await fetch(`http://127.0.0.1:${port}/pub/b2b/v1/objects/${CREDENTIALS.rkObjectId}`);
            assert.equal(get.status, 200, `${engine}: GET through the sidecar`);
            await get.arrayBuffer();
            const post = await fetch(`http://127.0.0.1:${port}/pub/b2b/v1/objects`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"x"}' });
            assert.ok(post.status < 500, `${engine}: POST through the sidecar answered ${post.status}`);
            await post.arrayBuffer();
          } finally {
            p.child.kill('SIGTERM');
          }
          assert.equal(await p.exited, 0, p.stderr());
          assert.doesNotMatch(p.stderr(), WARNING, `run, engine ${engine}, on Node ${version}`);
        }
        const file = await configFile(sim.baseUrl, 'http-proxy');
        for (const args of [['token', '--config', file], ['check-config', '--config', file], ['--version']]) {
          const r = await runCli(args, ENV, node);
          assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
          assert.doesNotMatch(r.stderr, WARNING, `${args.join(' ')} on Node ${version}`);
        }
      } finally {
        await sim.stop();
      }
      const demo = spawnCli(['demo'], ENV, node);
      try {
        const url = (await demo.waitFor(/^curl .*?(http:\/\/127\.0\.0\.1:\d+\/\S+)/m, 30_000))[1]!;
        let status = 0;
        for (let i = 0; i < 50 && status !== 200; i++) {
          const answer = await fetch(url.replace(/['"]$/, ''));
          status = answer.status;
          await answer.arrayBuffer();
          if (status !== 200) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        assert.equal(status, 200, 'the demo answers through its sidecar');
      } finally {
        demo.child.kill('SIGTERM');
      }
      await demo.exited;
      assert.doesNotMatch(demo.stderr(), WARNING, `demo on Node ${version}`);
    });
  }
});
