/**
 * The rule for the directory of `listen.socket` (docs/security.md "The unix socket"): whoever can
 * write it can remove the socket and put their own in its place, and every app on the host would
 * then hand its requests to them. So other users must not be able to write it, unless the sticky
 * bit keeps them from removing files they do not own and the directory's owner is trusted (the
 * sidecar's own user or root).
 */

/** The owner and mode of a directory, as `fs.statSync` gives them. */
export interface DirectoryStat {
  readonly uid: number;
  readonly mode: number;
}

const STICKY = 0o1000;
const GROUP_OR_OTHER_WRITE = 0o022;

/** Why other users could replace a socket in this directory, or undefined when they cannot. */
export function socketDirectoryProblem(dir: DirectoryStat, sidecarUid: number): string | undefined {
  const trustedOwner = dir.uid === sidecarUid || dir.uid === 0;
  if (!trustedOwner) return `belongs to another user (uid ${dir.uid}), who could replace the socket; use a directory of the sidecar's user or root`;
  if ((dir.mode & GROUP_OR_OTHER_WRITE) === 0 || (dir.mode & STICKY) !== 0) return undefined;
  const mode = (dir.mode & 0o7777).toString(8).padStart(4, '0');
  return `is writable by other users (mode ${mode}) without the sticky bit: they could replace the socket with their own; remove group and other write (chmod go-w), or set the sticky bit (chmod +t)`;
}
