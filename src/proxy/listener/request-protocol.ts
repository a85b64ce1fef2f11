import type { IncomingMessage } from 'node:http';

/** Why the listener refuses a request before any handler sees it. */
export interface ProtocolRefusal {
  status: 400 | 501 | 505;
  message: string;
}

/**
 * Protocol checks Node's parser leaves to the application:
 * - only HTTP/1.0 and 1.1: llhttp also accepts a request line without a version (read as 0.9),
 *   `HTTP/0.9` and `HTTP/2.0`, which were forwarded as HTTP/1.1 (→ 505);
 * - a transfer coding the sidecar cannot decode before `chunked` (`cow, chunked`) was dropped
 *   silently; `chunked` alone is the only one it can carry (→ 501, RFC 9112 §6.1);
 * - Transfer-Encoding in an HTTP/1.0 request is faulty framing (→ 400, RFC 9112 §6.1);
 * - more than one Host line (→ 400, RFC 9112 §3.2): Node keeps the first, another hop may not.
 */
export function protocolRefusal(req: IncomingMessage): ProtocolRefusal | undefined {
  if (req.httpVersionMajor !== 1 || req.httpVersionMinor > 1) {
    return { status: 505, message: 'HTTP version not supported: use HTTP/1.1 or HTTP/1.0' };
  }
  const te = req.headers['transfer-encoding'];
  if (te !== undefined) {
    if (req.httpVersionMinor === 0) return { status: 400, message: 'Transfer-Encoding is not allowed in an HTTP/1.0 request' };
    if (te.trim().toLowerCase() !== 'chunked') return { status: 501, message: 'transfer coding not supported: only chunked is' };
  }
  if (hostLines(req.rawHeaders) > 1) return { status: 400, message: 'more than one Host header' };
  return undefined;
}

function hostLines(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') n++;
  }
  return n;
}
