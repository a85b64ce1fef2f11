import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { spawnCli, type Spawned } from '../helpers/cli.js';

/**
 * `demo` exits: the documented exit codes, and no temporary folder (it holds the demo
 * credentials) or listening simulator left behind. `demo` runs through the built CLI
 * (`npm run build` first) with its own TMPDIR, so the folder it creates can be watched.
 */
const roots: string[] = [];
after(() => { for (const root of roots) rmSync(root, { recursive: true, force: true }); });

function freshTmp(): string {
  const dir = mkdtempSync(join(tmpdir(), 'b2b-demo-tmp-'));
  roots.push(dir);
  return dir;
}

/** Exit code, or a failure if the process does not end: a simulator left listening would keep it alive. */
async function exitOf(p: Spawned, ms = 30_000): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      p.child.kill('SIGKILL');
      reject(new Error(`still running after ${ms} ms; stderr: ${p.stderr()}`));
    }, ms);
  });
  try {
    return await Promise.race([p.exited, hung]);
  } finally {
    clearTimeout(timer);
  }
}

async function occupiedPort(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

describe('demo command', () => {
  it('exits 2 for --ttl 1.5 (tokens live whole seconds), naming the flag', async () => {
    const tmp = freshTmp();
    const p = spawnCli(['demo', '--ttl', '1.5'], { TMPDIR: tmp });
    assert.equal(await exitOf(p), 2);
    assert.match(p.stderr(), /--ttl/);
    assert.deepEqual(readdirSync(tmp), []);
  });

  it('exits 2 for a bad option value', async () => {
    const p = spawnCli(['demo', '--port', 'eighty'], { TMPDIR: freshTmp() });
    assert.equal(await exitOf(p), 2);
    assert.match(p.stderr(), /--port/);
  });

  for (const flag of ['--port', '--admin-port']) {
    it(`exits 2 when ${flag} is in use, closing the simulators it started and removing its folder`, async () => {
      const tmp = freshTmp();
      const { server, port } = await occupiedPort();
      try {
        const p = spawnCli(['demo', flag, String(port)], { TMPDIR: tmp });
        assert.equal(await exitOf(p), 2, p.stderr());
        assert.match(p.stderr(), /in use/);
        assert.deepEqual(readdirSync(tmp), [], 'the demo folder with the credentials is gone');
      } finally {
        server.close();
      }
    });
  }

  it('exits 2 when --port and --admin-port name the same port, naming both listeners and removing its folder', async () => {
    const tmp = freshTmp();
    const { server, port } = await occupiedPort();
    server.close(); // a free port, named twice
    const p = spawnCli(['demo', '--port', String(port), '--admin-port', String(port)], { TMPDIR: tmp });
    assert.equal(await exitOf(p), 2, p.stderr());
    assert.match(p.stderr(), /admin\.port .*would share/);
    assert.deepEqual(readdirSync(tmp), []);
  });

  it('removes its folder (CA, config with the demo credentials) when stopped with Ctrl-C', async () => {
    const tmp = freshTmp();
    const p = spawnCli(['demo'], { TMPDIR: tmp });
    try {
      const [, config] = await p.waitFor(/config: +(\S+sidecar\.yaml)/, 30_000);
      assert.ok(config!.startsWith(tmp), config);
      assert.ok(existsSync(config!), 'the config exists while the demo runs');
    } finally {
      p.child.kill('SIGINT');
    }
    assert.equal(await exitOf(p), 0, p.stderr());
    assert.deepEqual(readdirSync(tmp), []);
  });
});

/** Every process whose parent chain reaches `root` (from /proc), `root` excluded. */
function descendants(root: number): number[] {
  const parent = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The field after the parenthesised command name (which may hold spaces) is the state, then the parent pid.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parent.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  for (const pid of parent.keys()) {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) {
      if (p === root) {
        found.push(pid);
        break;
      }
    }
  }
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('npm run demo', () => {
  it('stops its whole process tree on SIGTERM to npm: no process left, its folder removed', async (t) => {
    // package.json's own demo script, minus its build step (a rebuild of dist/ would break the
    // tests running beside this one), run by npm from a project that links this build.
    const scripts = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { scripts: Record<string, string> }).scripts;
    // It runs through scripts/pinned-node.mjs (the pinned Node on a host with another line), which stays in the signal path.
    const wrapped = /^exec node scripts\/pinned-node\.mjs "npm run build --silent && (.*)"$/.exec(scripts.demo!);
    assert.ok(wrapped, scripts.demo);
    const project = freshTmp();
    symlinkSync(fileURLToPath(new URL('../../dist', import.meta.url)), join(project, 'dist'));
    symlinkSync(fileURLToPath(new URL('../../node_modules', import.meta.url)), join(project, 'node_modules'));
    symlinkSync(fileURLToPath(new URL('../../scripts', import.meta.url)), join(project, 'scripts'));
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'demo-probe', private: true, type: 'module', scripts: { demo: `exec node scripts/pinned-node.mjs "${wrapped[1]}"` } }));
    const tmp = freshTmp();
    const npm = spawn('npm', ['run', 'demo'], { cwd: project, env: { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: tmp } });
    let out = '';
    npm.stdout.on('data', (d) => (out += d));
    npm.stderr.on('data', () => undefined);
    // 'exit', not 'close': a demo process left behind would hold npm's output pipes open.
    const exited = new Promise<void>((r) => npm.once('exit', () => r()));
    t.after(() => npm.kill('SIGKILL'));
    for (let i = 0; i < 600 && !out.includes('demo is running'); i++) await new Promise((r) => setTimeout(r, 50));
    assert.match(out, /demo is running/);
    const tree = descendants(npm.pid!);
    assert.ok(tree.length > 0, 'npm started the demo');
    t.after(() => tree.forEach((pid) => alive(pid) && process.kill(pid, 'SIGKILL')));
    npm.kill('SIGTERM');
    await exited;
    // The demo drains first; bounded, so a process left serving fails the test instead of hanging it.
    for (let i = 0; i < 200 && tree.some(alive); i++) await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(tree.filter(alive), [], 'a process of the demo outlived npm');
    // (npm keeps its own compile cache under TMPDIR too)
    assert.deepEqual(readdirSync(tmp).filter((name) => name.startsWith('b2b-sidecar-demo-')), [], 'the demo folder was left behind');
  });
});
