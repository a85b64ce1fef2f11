import { connect } from 'node:net';
import { chmodSync, lchownSync, linkSync, lstatSync, mkdtempSync, readFileSync, rmSync, unlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { PRIVATE_DIR_PREFIX } from '../../shared/socket-path.js';

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

/**
 * Creates the socket at `path` safe from the start (docs/traps.md T50): `bind` listens in a
 * directory this process has just made (mode 0700, nobody else can enter it), the file gets its
 * mode and group there, and a hard link then puts it at `path`. Nothing is ever changed through
 * `path` itself, so a symlink (or any file) someone swaps in there is never followed or replaced:
 * the link fails with EEXIST instead. The private directory stays for the listener's lifetime:
 * the server's close unlinks the path it bound (`<dir>/.b2b-XXXXXX/s`), and were the directory
 * gone by then, whoever can write the socket directory could put a symlink at its name and have
 * that unlink follow it. In a sticky directory nobody else can remove or rename it meanwhile.
 * When creating fails, `unbind` closes the server first and the directory goes after it.
 */
export async function createSocketFile(
  path: string, mode: number, gid: number | undefined, bind: (at: string) => Promise<void>, unbind: () => Promise<void>,
): Promise<SocketFile> {
  const dir = mkdtempSync(join(dirname(path), PRIVATE_DIR_PREFIX));
  const own = lstatSync(dir);
  const privateDir = { path: dir, dev: own.dev, ino: own.ino };
  const at = join(dir, 's');
  try {
    await bind(at);
    chmodSync(at, mode);
    if (gid !== undefined) lchownSync(at, -1, gid);
    try {
      linkSync(at, path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new Error(`${path} appeared while the socket was being created: not replaced`);
      throw err;
    }
    const { dev, ino } = lstatSync(at);
    return { path, dev, ino, privateDir };
  } catch (err) {
    await unbind().catch(() => undefined);
    removePrivateDir(privateDir);
    throw err;
  }
}

interface OwnFile { readonly path: string; readonly dev: number; readonly ino: number }

/** The socket file a listener put at `path` (removed on close only while `path` still names it), and the private directory it was bound in. */
export interface SocketFile extends OwnFile {
  readonly privateDir: OwnFile;
}

/**
 * Removes the socket this process made, and nothing else, once its server is closed: the file at
 * `path` only while it is still the one linked there (another sidecar's live socket, someone's
 * file stays), then the private directory, only while it is still the one made for it.
 */
export function removeSocketFile(file: SocketFile): void {
  try {
    const now = lstatSync(file.path);
    if (now.dev === file.dev && now.ino === file.ino) unlinkSync(file.path);
  } catch {
    // already gone
  }
  removePrivateDir(file.privateDir);
}

function removePrivateDir(dir: OwnFile): void {
  const now = lstatSync(dir.path, { throwIfNoEntry: false });
  // Not a directory, or another one: not the one made here (lstat: a symlink is never followed).
  if (!now?.isDirectory() || now.dev !== dir.dev || now.ino !== dir.ino) return;
  rmSync(dir.path, { recursive: true, force: true });
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
