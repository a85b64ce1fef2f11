import { request } from 'node:http';
import { statusBytes } from './proc.js';

export interface StreamResult {
  direction: 'down' | 'up';
  bytes: number;
  ok: boolean;
  detail: string;
  seconds: number;
  /** RSS of the proxy just before the transfer, bytes. */
  rssBefore: number;
  /** Highest RSS seen during the transfer (sampled every 25 ms, and VmHWM when it rose), bytes. */
  rssPeak: number;
}

const CHUNK = Buffer.alloc(64 * 1024, 0x61);

/** Streams `bytes` through the proxy on `port` (GET download or POST echo) while sampling the proxy's RSS. */
export async function streamThrough(port: number, pid: number, direction: 'down' | 'up', bytes: number, timeoutMs: number): Promise<StreamResult> {
  const rssBefore = statusBytes(pid, 'VmRSS') ?? 0;
  const hwmBefore = statusBytes(pid, 'VmHWM') ?? 0;
  let rssPeak = rssBefore;
  const sampler = setInterval(() => {
    rssPeak = Math.max(rssPeak, statusBytes(pid, 'VmRSS') ?? 0);
  }, 25);
  const t0 = performance.now();
  try {
    const { ok, detail, received } = await (direction === 'down' ? download(port, bytes, timeoutMs) : upload(port, bytes, timeoutMs));
    const hwmAfter = statusBytes(pid, 'VmHWM') ?? 0;
    if (hwmAfter > hwmBefore) rssPeak = Math.max(rssPeak, hwmAfter);
    return { direction, bytes: received, ok, detail, seconds: (performance.now() - t0) / 1000, rssBefore, rssPeak };
  } finally {
    clearInterval(sampler);
  }
}

function download(port: number, bytes: number, timeoutMs: number): Promise<{ ok: boolean; detail: string; received: number }> {
  return new Promise((resolve) => {
    let received = 0;
    const req = request({ host: '127.0.0.1', port, path: `/pub/b2b/v1/download?bytes=${bytes}`, agent: false }, (res) => {
      res.on('data', (c: Buffer) => (received += c.length));
      res.on('end', () => resolve({ ok: res.statusCode === 200 && received === bytes, detail: `status ${res.statusCode}, ${received} bytes`, received }));
      res.on('error', (e) => resolve({ ok: false, detail: e.message, received }));
    });
    const timer = setTimeout(() => req.destroy(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (e) => resolve({ ok: false, detail: e.message, received }));
    req.end();
  });
}

function upload(port: number, bytes: number, timeoutMs: number): Promise<{ ok: boolean; detail: string; received: number }> {
  return new Promise((resolve) => {
    let sent = 0;
    const req = request({
      host: '127.0.0.1', port, path: '/pub/b2b/v1/echo', method: 'POST', agent: false,
      headers: { 'content-type': 'application/octet-stream', 'content-length': bytes },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let echoed = -1;
        try {
          echoed = (JSON.parse(text) as { bodyBytes: number }).bodyBytes;
        } catch {
          // not JSON: reported below
        }
        resolve({ ok: res.statusCode === 200 && echoed === bytes, detail: `status ${res.statusCode}, upstream received ${echoed} bytes`, received: Math.max(echoed, 0) });
      });
    });
    const timer = setTimeout(() => req.destroy(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (e) => resolve({ ok: false, detail: e.message, received: sent }));
    const pump = () => {
      while (sent < bytes) {
        const n = Math.min(CHUNK.length, bytes - sent);
        sent += n;
        if (!req.write(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))) {
          req.once('drain', pump);
          return;
        }
      }
      req.end();
    };
    pump();
  });
}
