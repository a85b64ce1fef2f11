import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { describe, it } from 'node:test';
import { send, startSidecar, startSimulator, waitReady } from '../helpers/stack.js';

/** A provider that puts a key in the proxy URL's user field: it must never show. */
const USER = 'proxy-user-key-5f1e2d';
const PASSWORD = 'proxy-password-9a8b7c';

/** A minimal CONNECT proxy (any credentials accepted) that can be taken away. */
async function connectProxy(): Promise<{ port: number; stop(): Promise<void> }> {
  const open = new Set<Socket | Duplex>();
  const server = createServer();
  server.on('connect', (req: IncomingMessage, client: Duplex) => {
    const [host, port] = (req.url ?? '').split(':');
    const upstream = connect(Number(port), host!, () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n');
      upstream.pipe(client).pipe(upstream);
    });
    for (const s of [client, upstream]) {
      open.add(s);
      s.on('error', () => undefined);
      s.once('close', () => open.delete(s));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as { port: number }).port,
    stop: () => new Promise<void>((r) => {
      for (const s of open) s.destroy();
      server.close(() => r());
    }),
  };
}

describe('the forward proxy\'s user name', () => {
  it('is masked like its password in the start log, a client\'s 502 body and /readyz', async (t) => {
    const sim = await startSimulator();
    t.after(() => sim.stop());
    const proxy = await connectProxy();
    const proxyUrl = `http://${USER}:${PASSWORD}@127.0.0.1:${proxy.port}`;
    const s = await startSidecar({ baseUrl: sim.baseUrl, overrides: { service: { proxy: proxyUrl } } });
    t.after(() => s.stop());
    await waitReady(s);
    await proxy.stop();
    const failed = await send(s.port, { path: '/pub/b2b/v1/echo' });
    assert.equal(failed.status, 502);
    assert.match(failed.body.toString(), /the egress proxy http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:\d+ \(service\.proxy\)/);

    // A second sidecar whose proxy is gone from the start: /readyz names the proxy, masked.
    const gone = await startSidecar({ baseUrl: sim.baseUrl, overrides: { service: { proxy: proxyUrl, tokenTimeoutMs: 2000 } } });
    t.after(() => gone.stop());
    let readyz = '';
    for (let i = 0; i < 100 && !readyz.includes('proxy'); i++) {
      readyz = (await send(gone.adminPort, { path: '/readyz' })).body.toString();
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(readyz, /\*\*\*:\*\*\*@127\.0\.0\.1/);

    const everything = [failed.body.toString(), readyz, s.log.text(), gone.log.text()].join('\n');
    assert.match(s.log.text(), /via proxy http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1:\d+ \(service\.proxy\)/);
    for (const secret of [USER, PASSWORD]) assert.equal(everything.includes(secret), false, `${secret} appeared`);
  });
});
