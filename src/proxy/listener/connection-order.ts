import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/**
 * Keeps a connection's pipelined requests in arrival order on their way to the handler
 * (docs/traps.md T32): request N+1 reaches the handler only once response N has closed. Node parses
 * and emits pipelined requests at once, and a proxy that dispatches each as soon as its head is
 * parsed lets a streamed request overtake a buffered one, so the service saw POST/DELETE in
 * another order than the client sent them. The client gets its responses in order anyway, so
 * waiting costs only the upstream overlap of pipelined requests, which few clients use.
 */

interface Entry {
  req: IncomingMessage;
  res: ServerResponse;
  dispatch: (req: IncomingMessage, res: ServerResponse) => void;
}

interface ConnectionState {
  /** Requests whose response has not closed yet, oldest first; the first one is being handled. */
  entries: Entry[];
  /** Run once no response is pending (an upgrade request waiting for earlier answers). */
  idle: Array<() => void>;
  /** A response said `Connection: close`: no later request will be answered, so none is handled. */
  last: boolean;
}

const STATE = Symbol('b2b-sidecar.connection-order');
/** `_last`: Node sent `Connection: close` with this response and ends the socket after it. */
type NodeResponse = ServerResponse & { _closed?: boolean; _last?: boolean };
/** `_httpMessage`: the response that holds the socket now (Node's own answers included). */
type OrderedSocket = Duplex & { [STATE]?: ConnectionState; _httpMessage?: NodeResponse | null };

/** Queues `req` behind the earlier requests of its connection; `dispatch` runs when it is first in line. */
export function admitInOrder(req: IncomingMessage, res: ServerResponse, dispatch: Entry['dispatch']): void {
  const socket = req.socket as OrderedSocket;
  const state = connectionState(socket);
  // Node answers some requests itself, outside the handler (400 for a missing Host, with
  // `Connection: close`), then still parses and emits the pipelined request behind it, whose
  // answer can never be sent: it must not go upstream.
  if (socket._httpMessage?._last) state.last = true;
  const entry: Entry = { req, res, dispatch };
  state.entries.push(entry);
  res.on('close', () => { // a response closes once (its _closed flag); `on` saves `once`'s wrapper
    const i = state.entries.indexOf(entry);
    if (i === -1) return; // closed already: never remove another request's entry
    state.entries.splice(i, 1);
    // After a `Connection: close` answer Node answers no later request (it may still parse one
    // whose bytes followed), so none may go upstream; the socket's close closes them.
    if ((res as NodeResponse)._last) state.last = true;
    // A destroyed socket is closing every queued response (closeQueued): none may start.
    if (!socket.destroyed && !state.last) advance(state);
  });
  if (state.entries.length === 1 && !state.last) dispatch(req, res);
}

/** Responses on `socket` not closed yet. */
export function pendingResponses(socket: Duplex): number {
  return (socket as OrderedSocket)[STATE]?.entries.length ?? 0;
}

/** Runs `fn` once no response is pending on `socket` (at once when none is); never if the socket closes first. */
export function whenIdle(socket: Duplex, fn: () => void): void {
  const state = connectionState(socket as OrderedSocket);
  if (state.entries.length > 0) {
    state.idle.push(fn);
    return;
  }
  // An answer Node wrote itself (a 417 for an unknown Expect) may still hold the socket.
  const current = (socket as OrderedSocket)._httpMessage;
  if (current && !current._closed) current.once('close', () => socket.destroyed || whenIdle(socket, fn));
  else fn();
}

function connectionState(socket: OrderedSocket): ConnectionState {
  let state = socket[STATE];
  if (!state) {
    state = socket[STATE] = { entries: [], idle: [], last: false };
    socket.once('close', closeQueued); // one listener per connection, not per request
  }
  return state;
}

function advance(state: ConnectionState): void {
  const next = state.entries[0];
  if (next) {
    next.dispatch(next.req, next.res);
    return;
  }
  for (const fn of state.idle.splice(0)) fn();
}

/**
 * Node 20 emits 'close' only on the response that holds the socket: responses queued behind it
 * (pipelining) never close when the client goes, so their upstream requests, in-flight counts
 * and log lines would leak. They are closed here the way Node closes the current one
 * (`emitCloseNT` in lib/_http_server.js, whose `_closed` flag keeps either side from closing
 * a response twice).
 */
function closeQueued(this: OrderedSocket): void {
  const state = this[STATE]!;
  state.idle.length = 0;
  for (const { res } of [...state.entries] as Array<{ res: NodeResponse }>) { // each 'close' removes its entry
    if (res._closed) continue;
    res.destroyed = true;
    res._closed = true;
    res.emit('close');
  }
}
