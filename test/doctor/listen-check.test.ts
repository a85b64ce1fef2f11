import assert from 'node:assert/strict';
import { createServer as createHttpServer } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { describe, it } from 'node:test';
import { checkListenAddresses } from '../../src/doctor/listen-check.js';

async function holding(server: Server): Promise<number> {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as AddressInfo).port;
}

describe('doctor: the addresses run will bind', () => {
  it('free ports, port 0, a port another program holds, an address not on this host', async () => {
    const other = createServer();
    const taken = await holding(other);
    const probe = createServer();
    const free = await holding(probe);
    await new Promise((r) => probe.close(r)); // a port just released is free again
    try {
      const ok = await checkListenAddresses([{ key: 'listen', host: '127.0.0.1', port: 0 }], { key: 'admin', host: '127.0.0.1', port: 0 });
      assert.deepEqual(ok, { step: 'listen', ok: true, detail: '127.0.0.1:0 (listen: a free port is picked at start)' });

      const admin = { key: 'admin' as const, host: '127.0.0.1', port: taken };
      const busy = await checkListenAddresses([{ key: 'listen', host: '127.0.0.1', port: taken }], admin, 500);
      assert.equal(busy.ok, false);
      assert.match(busy.detail, new RegExp(`127\\.0\\.0\\.1:${taken} \\(listen\\) is in use by another program`));
      assert.match(busy.hint ?? '', /run would exit 1: stop that program, or set listen\.port to a free port/);

      const foreign = await checkListenAddresses([{ key: 'admin', host: '192.0.2.1', port: free }], admin, 500);
      assert.equal(foreign.ok, false);
      assert.match(foreign.detail, /192\.0\.2\.1 is not an address of this host/);
    } finally {
      other.close();
    }
  });

  it('a port held by the running b2b-sidecar (its /healthz answers) is fine: doctor runs beside it', async () => {
    const sidecarAdmin = createHttpServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(req.url === '/healthz' ? '{"status":"ok"}' : '{}');
    });
    await new Promise<void>((r) => sidecarAdmin.listen(0, '127.0.0.1', r));
    const port = (sidecarAdmin.address() as AddressInfo).port;
    try {
      const admin = { key: 'admin' as const, host: '127.0.0.1', port };
      const step = await checkListenAddresses([admin], admin);
      assert.deepEqual(step, { step: 'listen', ok: true, detail: `127.0.0.1:${port} (admin) in use by the running b2b-sidecar (its /healthz answers)` });
    } finally {
      sidecarAdmin.close();
    }
  });
});
