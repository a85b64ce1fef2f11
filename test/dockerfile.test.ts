import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ConfigSchema } from '../src/config-schema.js';

/**
 * The image cannot be built here (no Docker engine), so the Dockerfile is parsed and its
 * invariants checked; scripts/runtime-smoke.sh runs the runtime stage's steps without Docker.
 */
const root = new URL('../', import.meta.url);
const dockerfile = readFileSync(new URL('Dockerfile', root), 'utf8');
const dockerignore = readFileSync(new URL('.dockerignore', root), 'utf8');
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { engines: { node: string } };

interface Instruction {
  name: string; // upper case
  args: string; // continuation lines joined, flags included
  line: number;
}

interface Stage {
  image: string;
  alias?: string;
  body: Instruction[];
}

/** Just enough of the Dockerfile grammar: comments, `\` continuations, one instruction a line. */
function parseDockerfile(source: string): Instruction[] {
  const out: Instruction[] = [];
  let pending = '';
  let start = 0;
  source.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (/^\s*#/.test(line) || (pending === '' && line.trim() === '')) return;
    if (pending === '') start = i + 1;
    if (/\\\s*$/.test(line)) {
      pending += `${line.replace(/\\\s*$/, '')} `;
      return;
    }
    const full = (pending + line).trim();
    pending = '';
    const m = /^(\w+)\s+([\s\S]*)$/.exec(full);
    assert.ok(m, `line ${start}: cannot parse "${full}"`);
    out.push({ name: m[1]!.toUpperCase(), args: m[2]!.trim(), line: start });
  });
  assert.equal(pending, '', 'the Dockerfile ends inside a line continuation');
  return out;
}

function stagesOf(instructions: Instruction[]): Stage[] {
  const stages: Stage[] = [];
  for (const ins of instructions) {
    if (ins.name === 'FROM') {
      const m = /^(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      assert.ok(m, `line ${ins.line}: unexpected FROM "${ins.args}"`);
      stages.push({ image: m[1]!, alias: m[2], body: [] });
    } else {
      assert.ok(stages.length > 0 || ins.name === 'ARG', `line ${ins.line}: ${ins.name} before the first FROM`);
      stages.at(-1)?.body.push(ins);
    }
  }
  return stages;
}

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

const instructions = parseDockerfile(dockerfile);
const stages = stagesOf(instructions);
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

  it('pins every base image by version tag, on the Node major the package supports', () => {
    const major = /(\d+)/.exec(pkg.engines.node)?.[1];
    for (const stage of stages) {
      if (stages.some((s) => s.alias === stage.image)) continue; // FROM an earlier stage
      assert.match(stage.image, /^[\w.\-/]+:[\w.-]+$/, `${stage.image}: pinned by tag`);
      const tag = stage.image.split(':')[1]!;
      assert.doesNotMatch(tag, /^(latest|current|lts)/, `${stage.image}: a floating tag`);
      assert.match(tag, new RegExp(`^${major}\\.\\d+\\.\\d+-`), `${stage.image}: full Node ${major}.x.y version in the tag`);
    }
  });

  it('runs as a numeric non-root user, set after every RUN', () => {
    const user = only(runtime, 'USER');
    assert.match(user.args, /^\d+(:\d+)?$/, 'numeric uid[:gid], so runAsNonRoot can verify it');
    assert.notEqual(Number(user.args.split(':')[0]), 0);
    const lastRun = all(runtime, 'RUN').at(-1);
    assert.ok(!lastRun || lastRun.line < user.line, 'USER comes after the last RUN');
  });

  it('has the production environment, a WORKDIR and npm removed from the runtime stage', () => {
    assert.ok(all(runtime, 'ENV').some((e) => /\bNODE_ENV=production\b/.test(e.args)));
    assert.match(only(runtime, 'WORKDIR').args, /^\/\S+$/);
    assert.match(runs(runtime), /rm -rf[^\n]*\/usr\/local\/lib\/node_modules\/npm/);
  });

  it('sets no V8 flags through NODE_OPTIONS (they would make Node reject its built-in code cache)', () => {
    assert.ok(!all(runtime, 'ENV').some((e) => /\bNODE_OPTIONS=/.test(e.args)));
  });

  it('has ENTRYPOINT node dist/cli.js and CMD run --config /etc/b2b-sidecar/sidecar.yaml, both in exec form', () => {
    assert.deepEqual(execForm(only(runtime, 'ENTRYPOINT').args, 'ENTRYPOINT'), ['node', 'dist/cli.js']);
    assert.deepEqual(execForm(only(runtime, 'CMD').args, 'CMD'), ['run', '--config', '/etc/b2b-sidecar/sidecar.yaml']);
  });

  it('exposes the default proxy and admin ports of the config schema', () => {
    const ports = all(runtime, 'EXPOSE').flatMap((e) => e.args.split(/\s+/)).map((p) => Number(p.split('/')[0]));
    assert.deepEqual([...ports].sort(), [PROXY_PORT, ADMIN_PORT].sort());
  });

  it('health-checks /healthz on the admin port with node itself', () => {
    const cmd = healthcheckCommand();
    assert.equal(cmd[0], 'node', 'curl is not in the image');
    assert.equal(cmd[1], '-e');
    assert.match(cmd[2]!, /\/healthz/);
    assert.match(cmd[2]!, new RegExp(`\\b${ADMIN_PORT}\\b`));
  });

  it('copies only files that exist and that .dockerignore lets through', () => {
    const ignored = dockerignore
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.startsWith('#'))
      .map((p) => {
        assert.ok(!p.startsWith('!'), 'negations are not handled by this test');
        const re = p.replace(/[.+^${}()|[\]]/g, '\\$&').replace(/\*\*\//g, '(?:.*/)?').replace(/\*/g, '[^/]*');
        return new RegExp(`^${re}(?:/.*)?$`);
      });
    for (const stage of stages) {
      for (const copy of all(stage, 'COPY')) {
        if (/--from=/.test(copy.args)) continue;
        const parts = copy.args.replace(/--\S+\s+/g, '').split(/\s+/);
        for (const source of parts.slice(0, -1)) {
          const path = source.replace(/^\.\//, '').replace(/\/$/, '');
          assert.ok(existsSync(new URL(path, root)), `COPY ${source}: not in the repository`);
          assert.ok(!ignored.some((re) => re.test(path)), `COPY ${source}: excluded by .dockerignore`);
        }
      }
    }
    for (const path of ['node_modules', 'dist', '.git', 'test/x.test.ts']) {
      assert.ok(ignored.some((re) => re.test(path)), `.dockerignore should exclude ${path}`);
    }
  });
});

describe('Dockerfile HEALTHCHECK command', () => {
  let server: Server;
  let port = 0;
  let status = 200;
  before(async () => {
    server = createServer((req, res) => {
      res.statusCode = req.url === '/healthz' ? status : 404;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Runs the HEALTHCHECK's node command as Docker would, with the admin port moved by env. */
  function check(): Promise<number | null> {
    const [bin, ...args] = healthcheckCommand();
    assert.equal(bin, 'node');
    const child = spawn(process.execPath, args, { env: { B2B_ADMIN_PORT: String(port) }, stdio: 'ignore' });
    return new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }

  it('exits 0 while /healthz answers 200', async () => {
    status = 200;
    assert.equal(await check(), 0);
  });

  it('exits 1 when /healthz answers 503', async () => {
    status = 503;
    assert.equal(await check(), 1);
  });

  it('exits 1 when nothing listens', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const freed = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const saved = port;
    port = freed;
    try {
      assert.equal(await check(), 1);
    } finally {
      port = saved;
    }
  });
});
