import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { YOUNG_GENERATION_NODE_OPTION } from '../../src/shared/v8-tuning.js';
import { createAdminHandler } from '../../src/observability/admin.js';
import { ConfigSchema } from '../../src/config/schema.js';
import { createRegistry } from '../../src/observability/metrics.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { runCli } from '../helpers/cli.js';
import { contextCopies, isIgnored, parseDockerfile, parseDockerignore, stageFiles, stagesOf, type Stage } from '../../scripts/docker-context.js';

/**
 * The image cannot be built here (no Docker engine), so the Dockerfile is parsed and its
 * invariants checked; scripts/runtime-smoke.sh runs the runtime stage's steps without Docker.
 * The HEALTHCHECK tests run the built CLI (`npm run build` first).
 */
const root = new URL('../../', import.meta.url);
const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');
const dockerignore = readFileSync(new URL('.dockerignore', root), 'utf8');
const rootPath = fileURLToPath(root);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string }; scripts: { build: string } };

/** Exec form (a JSON array) of CMD/ENTRYPOINT/HEALTHCHECK CMD; fails on shell form. */
function execForm(args: string, what: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    assert.fail(`${what} must use the exec (JSON array) form so no shell is needed, got: ${args}`);
  }
  assert.ok(Array.isArray(parsed) && parsed.every((a) => typeof a === 'string'), `${what} must be an array of strings`);
  return parsed as string[];
}

const stages = stagesOf(parseDockerfile(dockerfile));
const runtime = stages.at(-1)!;
const build = stages[0]!;
const all = (stage: Stage, name: string) => stage.body.filter((i) => i.name === name);
const only = (stage: Stage, name: string) => {
  const found = all(stage, name);
  assert.equal(found.length, 1, `the ${stage.alias ?? stage.image} stage must have exactly one ${name}`);
  return found[0]!;
};
const runs = (stage: Stage) => all(stage, 'RUN').map((i) => i.args).join('\n');

const defaults = ConfigSchema.properties;
const PROXY_PORT = defaults.listen.properties.port.default;
const ADMIN_PORT = defaults.admin.properties.port.default;

function healthcheckCommand(): string[] {
  const hc = only(runtime, 'HEALTHCHECK');
  const m = /^((?:--\S+\s+)*)CMD\s+(.*)$/s.exec(hc.args);
  assert.ok(m, `HEALTHCHECK must be HEALTHCHECK [options] CMD [...], got ${hc.args}`);
  return execForm(m[2]!, 'HEALTHCHECK CMD');
}

describe('Dockerfile', () => {
  it('is multi-stage: a build stage compiles, the runtime stage installs production dependencies only', () => {
    assert.ok(stages.length >= 2, 'at least a build and a runtime stage');
    assert.match(runs(build), /\bnpm ci\b/);
    assert.doesNotMatch(runs(build), /--omit=dev/, 'the build stage needs the dev dependencies (typescript)');
    assert.match(runs(build), /\bnpm run build\b/);

    assert.match(runs(runtime), /\bnpm ci\b[^\n&|;]*--omit=dev/, 'runtime: npm ci --omit=dev');
    assert.doesNotMatch(runs(runtime), /npm run build|\btsc\b/, 'nothing is compiled in the runtime stage');
    const copies = all(runtime, 'COPY').map((i) => i.args);
    assert.ok(copies.some((c) => new RegExp(`--from=${build.alias}\\s+\\S*dist\\s`).test(c)), 'runtime copies dist/ from the build stage');
    assert.ok(!copies.some((c) => /^(\S+\s+)*(\.|src|\.\/src)\s/.test(c.replace(/--\S+\s+/g, ''))), 'runtime copies neither the whole context nor src/');
    assert.ok(copies.some((c) => /\bpackage\.json\b/.test(c)), 'runtime has package.json (the CLI reads its version from it)');
  });

  it('pins every base image by full version tag, on the runtime the project ships (.node-version)', () => {
    const pinned = readFileSync(new URL('.node-version', root), 'utf8').trim();
    for (const stage of stages) {
      if (stages.some((s) => s.alias === stage.image)) continue; // FROM an earlier stage
      assert.match(stage.image, /^[\w.\-/]+:[\w.-]+$/, `${stage.image}: pinned by tag`);
      const tag = stage.image.split(':')[1]!;
      assert.doesNotMatch(tag, /^(latest|current|lts)/, `${stage.image}: a floating tag`);
      assert.ok(tag.startsWith(`${pinned}-`), `${stage.image}: Node ${pinned} (.node-version) in the tag`);
    }
  });

  it('runs as a numeric non-root user, set after every RUN', () => {
    const user = only(runtime, 'USER');
    assert.match(user.args, /^\d+(:\d+)?$/, 'numeric uid[:gid], so runAsNonRoot can verify it');
    assert.notEqual(Number(user.args.split(':')[0]), 0);
    const lastRun = all(runtime, 'RUN').at(-1);
    assert.ok(!lastRun || lastRun.line < user.line, 'USER comes after the last RUN');
  });

  it('has the production environment, a WORKDIR and npm, corepack and yarn removed from the runtime stage', () => {
    assert.ok(all(runtime, 'ENV').some((e) => /\bNODE_ENV=production\b/.test(e.args)));
    assert.match(only(runtime, 'WORKDIR').args, /^\/\S+$/);
    const removed = /rm -rf([^\n]*)/.exec(runs(runtime))?.[1] ?? '';
    // The official node image: npm and corepack under /usr/local, yarn 1 in /opt/yarn-v<version>.
    for (const path of ['/usr/local/lib/node_modules/npm', '/usr/local/lib/node_modules/corepack', '/usr/local/bin/npm',
      '/usr/local/bin/npx', '/usr/local/bin/corepack', '/opt/yarn-v*', '/usr/local/bin/yarn', '/usr/local/bin/yarnpkg']) {
      assert.ok(removed.split(/\s+/).includes(path), `the runtime stage removes ${path}`);
    }
  });

  it('fails the build when npm ci left the tree incomplete (npm 10 can exit 0 after "Exit handler never called!")', () => {
    // `npm ls` exits non-zero on a missing package; chained with && right after each npm ci.
    assert.match(runs(build), /\bnpm ci\b[^\n]*&&\s*npm ls\b/);
    assert.match(runs(runtime), /\bnpm ci\b[^\n]*--omit=dev[^\n]*&&\s*npm ls --omit=dev\b/);
  });

  it('sets through NODE_OPTIONS only the young generation\'s cap, with which Node keeps its code caches, and --disable-sigusr1', () => {
    const options = all(runtime, 'ENV').map((e) => /^NODE_OPTIONS="?([^"]*)"?$/.exec(e.args)?.[1]).filter((v) => v !== undefined);
    assert.deepEqual(options, [`${YOUNG_GENERATION_NODE_OPTION} --disable-sigusr1`]);
    // Any other V8 flag at start makes Node reject the code cache of its built-in modules (~3×
    // slower loading) and ours; this one does not, on the runtime the image ships.
    const env = { PATH: process.env['PATH'], NODE_OPTIONS: options[0] };
    const builtins = spawnSync(process.execPath, ['-e', 'require("node:http")'], { encoding: 'utf8', env: { ...env, NODE_DEBUG_NATIVE: 'CODE_CACHE' } });
    assert.doesNotMatch(builtins.stderr, /is rejected/, 'Node rejected its built-in code cache');
    assert.match(builtins.stderr, /is accepted/);
    const ours = spawnSync(process.execPath, ['--input-type=module', '-e', `const { loadCommonJs } = await import(${JSON.stringify(join(rootPath, 'dist/lib/entry/code-cache.js'))});
      process.stdout.write(String(loadCommonJs(${JSON.stringify(join(rootPath, 'dist/lib/bundle/run.cjs'))}).cacheUsed));`], { encoding: 'utf8', env });
    assert.equal(ours.stdout, 'true', `dist/lib/bundle/run.cjs.v8cache was rejected: ${ours.stderr}`);
  });

  it('has ENTRYPOINT node dist/cli.js and CMD run --config /etc/b2b-sidecar/sidecar.yaml, both in exec form', () => {
    assert.deepEqual(execForm(only(runtime, 'ENTRYPOINT').args, 'ENTRYPOINT'), ['node', 'dist/cli.js']);
    assert.deepEqual(execForm(only(runtime, 'CMD').args, 'CMD'), ['run', '--config', '/etc/b2b-sidecar/sidecar.yaml']);
  });

  it('exposes the default proxy and admin ports of the config schema', () => {
    const ports = all(runtime, 'EXPOSE').flatMap((e) => e.args.split(/\s+/)).map((p) => Number(p.split('/')[0]));
    assert.deepEqual([...ports].sort(), [PROXY_PORT, ADMIN_PORT].sort());
  });

  it('health-checks with the CLI\'s healthcheck command, reading the same config file as CMD', () => {
    const cmd = healthcheckCommand();
    const entrypoint = execForm(only(runtime, 'ENTRYPOINT').args, 'ENTRYPOINT');
    const config = execForm(only(runtime, 'CMD').args, 'CMD');
    assert.deepEqual(cmd, [...entrypoint, 'healthcheck', '--config', config[config.indexOf('--config') + 1]!]);
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const rules = parseDockerignore(dockerignore);
    // stageFiles throws, as docker build would fail, on a missing or excluded source.
    for (const stage of stages) assert.doesNotThrow(() => stageFiles(rootPath, stage, rules));
    for (const path of ['node_modules', 'dist', '.git', 'test/x.test.ts', 'src/a/key.pem', '.env']) {
      assert.ok(isIgnored(path, rules), `.dockerignore should exclude ${path}`);
    }
  });

  it('gives the build stage every file that npm run build reads', () => {
    const copied = new Set(stageFiles(rootPath, build, parseDockerignore(dockerignore)).map(([from]) => from));
    // The build script names its inputs (tsconfig.json, scripts/bundle.mjs); tsc reads src/.
    const named = pkg.scripts.build.split(/\s+/).filter((word) => /\.(json|mjs|js|ts)$/.test(word));
    assert.ok(named.length >= 2, `expected file names in the build script: ${pkg.scripts.build}`);
    for (const file of [...named, 'src/entry/cli-bundle.ts', 'src/sidecar.ts']) {
      assert.ok(copied.has(file), `the build stage does not get ${file} from the context`);
    }
    assert.ok(contextCopies(build).every((c) => !c.sources.includes('.')), 'the build stage copies named inputs, not the whole context');
  });

  it('reads .dockerignore as Docker does: directories, ** and ! exceptions, last match wins', () => {
    const rules = parseDockerignore('scripts\n!scripts/bundle.mjs\n**/*.pem\n');
    assert.equal(isIgnored('scripts/test-rules.sh', rules), true);
    assert.equal(isIgnored('scripts/bundle.mjs', rules), false);
    assert.equal(isIgnored('a/b/c.pem', rules), true);
    assert.equal(isIgnored('src/entry/cli-bundle.ts', rules), false);
  });
});

describe('deploy/container/Dockerfile: the image from a release\'s Linux archive', () => {
  const release = stagesOf(parseDockerfile(readFileSync(new URL('deploy/container/Dockerfile', root), 'utf8')));
  const image = release[0]!;
  const settings = (stage: Stage) => stage.body.filter((i) => ['ENV', 'WORKDIR', 'USER', 'EXPOSE', 'HEALTHCHECK', 'ENTRYPOINT', 'CMD'].includes(i.name)).map((i) => `${i.name} ${i.args}`);

  it('is one stage on the runtime stage\'s base, with its settings, health check, entry point and command, in order', () => {
    assert.equal(release.length, 1);
    assert.equal(image.image, runtime.image);
    assert.deepEqual(settings(image), settings(runtime));
    const names = image.body.map((i) => i.name);
    assert.ok(names.lastIndexOf('RUN') < names.indexOf('USER') && names.lastIndexOf('COPY') < names.indexOf('USER'), 'USER after every RUN and COPY');
  });

  it('copies what the archive has and the runtime stage gets: package.json, the production node_modules, dist (not node/ or bin/)', () => {
    const copies = all(image, 'COPY').map((i) => i.args.split(/\s+/));
    assert.deepEqual(copies, [['package.json', './'], ['node_modules', './node_modules'], ['dist', './dist']]);
    const files = (JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { files: string[] }).files;
    assert.ok(files.includes('dist/') && files.includes('deploy/'), 'dist/ and this Dockerfile are in the npm package the archive is made from');
    assert.match(readFileSync(new URL('scripts/release.mjs', root), 'utf8'), /renameSync\(join\(prod, 'node_modules'\), join\(app, 'node_modules'\)\)/, 'the archive carries the production node_modules');
  });

  it('removes npm, corepack and yarn as the runtime stage does', () => {
    const removed = (stage: Stage) => runs(stage).split(/\s+/).filter((w) => w.startsWith('/'));
    for (const path of removed(runtime)) assert.ok(removed(image).includes(path), path);
  });

  it('says how to build it with podman without losing HEALTHCHECK (--format docker), as docs/install.md does', () => {
    const text = readFileSync(new URL('deploy/container/Dockerfile', root), 'utf8');
    assert.match(text, /podman build --format docker -f deploy\/container\/Dockerfile/);
    const install = readFileSync(new URL('docs/install.md', root), 'utf8');
    assert.match(install, /podman build --format docker/);
    assert.match(install, /docker build -f deploy\/container\/Dockerfile/);
    assert.match(dockerfile, /--format docker/);
  });
});

describe('Dockerfile HEALTHCHECK command', () => {
  let server: Server;
  let dir: string;
  before(async () => {
    // A real admin listener (the sidecar's own handler) on a free port.
    const logger = createCaptureLogger().logger;
    server = createServer(createAdminHandler({ registry: createRegistry(), health: () => ({ ready: false }), allow: () => true, logger }));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    dir = mkdtempSync(join(tmpdir(), 'b2b-docker-hc-'));
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the HEALTHCHECK as Docker would, with the built CLI for dist/cli.js and `port` in the config file. */
  async function check(port: number, env: NodeJS.ProcessEnv = {}): Promise<number | null> {
    const [bin, script, ...args] = healthcheckCommand();
    assert.equal(bin, 'node');
    assert.equal(script, 'dist/cli.js');
    const file = join(dir, `sidecar-${port}.yaml`);
    writeFileSync(file, [
      'service: { baseUrl: "https://api.example.com" }',
      'credentials: { apiKey: k, password: p }',
      `admin: { host: 0.0.0.0, port: ${port} }`,
    ].join('\n'));
    const configAt = args.indexOf('--config') + 1;
    args[configAt] = file;
    return (await runCli(args, env)).code;
  }

  it('exits 0 while the admin listener the config names answers /healthz 200 (a 0.0.0.0 bind is checked on loopback)', async () => {
    assert.equal(await check((server.address() as AddressInfo).port), 0);
  });

  it('follows B2B_ADMIN_PORT as run does, and exits 1 when nothing listens there', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freed = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    assert.equal(await check(freed), 1);
    assert.equal(await check(freed, { B2B_ADMIN_PORT: String((server.address() as AddressInfo).port) }), 0);
  });
});
