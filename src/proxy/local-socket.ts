import { connect } from 'node:net';
import { lstatSync, readFileSync, unlinkSync } from 'node:fs';

/**
 * The unix-socket listener's side of things: its connections carry no address, so the source
 * guard cannot judge them; the socket file's mode and group are the guard instead (checked by
 * check-config). Connections accepted there are marked, and the handler lets marked ones through.
 */
export const LOCAL_SOCKET = Symbol('b2b-sidecar.local-socket');

/** True for a connection accepted on the unix socket (see createListener's `local` policy). */
export function isLocalSocket(socket: object | null | undefined): boolean {
  return socket !== null && socket !== undefined && (socket as { [LOCAL_SOCKET]?: boolean })[LOCAL_SOCKET] === true;
}

/**
 * Makes way for a new socket at `path`: nothing there is fine; a socket nobody answers on (left by
 * a crashed run) is removed; a socket someone answers on, or any other file, is refused.
 */
export async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = lstatSync(path).isSocket();
  } catch {
    return; // nothing there
  }
  if (!isSocket) throw new Error(`${path} exists and is not a socket: not replaced`);
  const live = await new Promise<boolean>((resolve) => {
    const probe = connect(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
  if (live) throw new Error(`${path} is in use by a running process (another sidecar?)`);
  unlinkSync(path);
}

/** A group name or number as a gid (names from /etc/group), or why not. */
export function groupId(group: string): number {
  if (/^\d+$/.test(group)) return Number(group);
  for (const line of readFileSync('/etc/group', 'utf8').split('\n')) {
    const [name, , gid] = line.split(':');
    if (name === group && gid !== undefined) return Number(gid);
  }
  throw new Error(`group ${group} does not exist`);
}
