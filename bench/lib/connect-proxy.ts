import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A minimal HTTP CONNECT forward proxy for the soak (loopback only): it opens the tunnel the
 * sidecar asks for (only to `allowHost`) and can reset the tunnels that are idle, as an upstream or
 * a middlebox closing idle keep-alive connections with a RST would.
 */
export interface SoakProxy {
  url: string;
  /** Resets (RST) every tunnel with no byte either way for `idleMs`; returns how many. */
  resetIdle(idleMs: number): number;
  stats(): { tunnels: number; open: number; resets: number; refused: number };
  close(): Promise<void>;
}

interface Tunnel { client: Socket; upstream: Socket; lastActive: number }

export async function startSoakProxy(allowHost: string): Promise<SoakProxy> {
  const tunnels = new Set<Tunnel>();
  let opened = 0;
  let resets = 0;
  let refused = 0;
  const server: Server = createServer((client) => {
    client.on('error', () => undefined);
    let head = '';
    const onData = (chunk: Buffer) => {
      head += chunk.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) {
        if (head.length > 8192) client.destroy();
        return;
      }
      client.off('data', onData);
      const m = /^CONNECT ([^\s:]+):(\d+) HTTP\/1\.[01]\r\n/.exec(head);
      if (!m || m[1] !== allowHost) {
        refused++;
        client.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
        return;
      }
      const rest = Buffer.from(head.slice(end + 4), 'latin1');
      const upstream = connect(Number(m[2]), m[1]);
      upstream.on('error', () => client.destroy());
      const tunnel: Tunnel = { client, upstream, lastActive: performance.now() };
      upstream.once('connect', () => {
        opened++;
        tunnels.add(tunnel);
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (rest.length) upstream.write(rest);
        const touch = () => (tunnel.lastActive = performance.now());
        client.on('data', touch);
        upstream.on('data', touch);
        client.pipe(upstream);
        upstream.pipe(client);
      });
      const gone = () => {
        tunnels.delete(tunnel);
        client.destroy();
        upstream.destroy();
      };
      client.once('close', gone);
      upstream.once('close', gone);
    };
    client.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    resetIdle(idleMs) {
      const now = performance.now();
      let n = 0;
      for (const t of [...tunnels]) {
        if (now - t.lastActive < idleMs) continue;
        t.upstream.resetAndDestroy();
        t.client.resetAndDestroy();
        tunnels.delete(t);
        n++;
      }
      resets += n;
      return n;
    },
    stats: () => ({ tunnels: opened, open: tunnels.size, resets, refused }),
    close: () => new Promise<void>((resolve) => {
      for (const t of tunnels) {
        t.client.destroy();
        t.upstream.destroy();
      }
      server.close(() => resolve());
    }),
  };
}
