import type { IncomingHttpHeaders, IncomingMessage, Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * `Upgrade: h2c` is ignored, not refused (RFC 9110 §7.8 lets a server ignore Upgrade; docs/traps.md T23):
 * Java 11+'s default `java.net.http.HttpClient` and `curl --http2` send it on every request on a
 * new connection, and a 501 broke them all. The request is served as plain HTTP/1.1.
 */

const UPGRADE_HEADERS: ReadonlySet<string> = new Set(['upgrade', 'http2-settings']);

/** True when every protocol the client offers is `h2c` (one offering WebSocket as well wants WebSocket). */
export function offersOnlyH2c(upgrade: string | undefined): boolean {
  if (upgrade === undefined) return false;
  return upgrade.split(',').every((protocol) => protocol.trim().toLowerCase() === 'h2c');
}

/** The `Connection` value without the tokens naming the upgrade headers; undefined when nothing is left. */
function connectionWithoutUpgrade(value: string): string | undefined {
  const kept = value.split(',').map((t) => t.trim()).filter((t) => t !== '' && !UPGRADE_HEADERS.has(t.toLowerCase()));
  return kept.length > 0 ? kept.join(', ') : undefined;
}

/**
 * An h2c offer Node left in a normal request (its Connection does not name `upgrade`, so the
 * parser did not treat it as an upgrade): removed before the handler sees it.
 */
export function dropH2cOffer(headers: IncomingHttpHeaders): void {
  delete headers['upgrade'];
  delete headers['http2-settings'];
  const connection = headers['connection'];
  if (connection === undefined) return;
  const kept = connectionWithoutUpgrade(connection);
  if (kept === undefined) delete headers['connection'];
  else headers['connection'] = kept;
}

/**
 * The request head again as the client sent it (names, values and order from `rawHeaders`,
 * whose strings are the parser's latin1 bytes), minus `Upgrade`, `HTTP2-Settings` and the
 * `Connection` tokens naming them.
 */
export function headWithoutUpgrade(req: IncomingMessage): Buffer {
  let head = `${req.method} ${req.url} HTTP/${req.httpVersion}\r\n`;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    const lower = name.toLowerCase();
    if (UPGRADE_HEADERS.has(lower)) continue;
    let value: string | undefined = raw[i + 1]!;
    if (lower === 'connection') value = connectionWithoutUpgrade(value);
    if (value !== undefined) head += `${name}: ${value}\r\n`;
  }
  return Buffer.from(`${head}\r\n`, 'latin1');
}

/**
 * Hands a request Node detached as an upgrade back to the HTTP server: its head without the
 * offer, then the bytes read after it (its body, pipelined requests), go in front of the socket's
 * unread data, and a fresh parser takes the connection over (`'connection'` is the documented
 * way to inject a socket). Must run only once every earlier response on the socket has closed:
 * the old parser's response queue is gone, so a new response would never get the socket.
 */
export function refeedWithoutUpgrade(server: Server, socket: Socket, req: IncomingMessage, bodyHead: Buffer, body: UpgradeBody = NO_BODY): void {
  if (socket.destroyed || socket.readableEnded) {
    socket.destroy();
    return;
  }
  // The detached parser may have left its keep-alive idle timer armed; the new one sets its own.
  socket.setTimeout(0);
  const head = headWithoutUpgrade(req);
  socket.unshift(Buffer.concat([head, framed(req, body), bodyHead]));
  server.emit('connection', socket);
}

/** The body of an upgrade request as Node handed it over: through `req` (Node 26) or not at all. */
export interface UpgradeBody { viaStream: boolean; bytes: Buffer }
const NO_BODY: UpgradeBody = Object.freeze({ viaStream: false, bytes: Buffer.alloc(0) });

/**
 * Node 22 and 24 leave an upgrade request's body in the bytes after its head (`bodyHead`) and end
 * `req` empty; Node 26 parses the body into `req` and leaves only what follows it. The body is read
 * here (at most `limit` bytes: undefined beyond) so the re-fed request carries it again.
 */
export function readUpgradeBody(req: IncomingMessage, limit: number): Promise<UpgradeBody | undefined> {
  if (req.readableEnded) return Promise.resolve(NO_BODY);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    // No data at all: the body (if any) is still in bodyHead, as on Node 22 and 24. (An empty
    // chunked body that Node 26 parsed cannot be told from that; it is left as it was.)
    req.once('end', () => resolve(size > 0 ? { viaStream: true, bytes: Buffer.concat(chunks, size) } : NO_BODY));
    req.once('error', reject);
  });
}

/** The body bytes framed again as the head announces them: chunked as one chunk, else as they are. */
function framed(req: IncomingMessage, body: UpgradeBody): Buffer {
  if (!body.viaStream) return body.bytes;
  if (req.headers['transfer-encoding'] === undefined) return body.bytes;
  const size = body.bytes.length;
  return Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`, 'latin1'), body.bytes, Buffer.from('\r\n0\r\n\r\n', 'latin1')]);
}
