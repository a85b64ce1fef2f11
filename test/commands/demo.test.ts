import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
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
