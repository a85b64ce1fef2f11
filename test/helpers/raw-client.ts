import { connect } from 'node:net';

/** What a raw exchange got back: every byte until the listener closed (or `timeoutMs` passed). */
export interface RawResult {
  text: string;
  timedOut: boolean;
}

/**
 * Writes `bytes` (one write, so pipelined requests arrive together) and collects the answer
 * until the listener closes the connection; bounded by `timeoutMs`.
 */
export function rawExchange(port: number, bytes: string | Buffer, timeoutMs = 5000): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes));
    const chunks: Buffer[] = [];
    let timedOut = false;
    socket.setTimeout(timeoutMs, () => {
      timedOut = true;
      socket.destroy();
    });
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('close', () => resolve({ text: Buffer.concat(chunks).toString('latin1'), timedOut }));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)));
  });
}

/** Status codes of every response in a raw answer, in order. */
export function statuses(text: string): number[] {
  return [...text.matchAll(/(?:^|\r\n)HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
}
