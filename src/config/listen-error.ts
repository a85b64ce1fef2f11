import { formatProblem, type ConfigPath } from './walk.js';
import { SidecarError } from '../shared/errors.js';

const REASONS: Record<string, string> = {
  EADDRINUSE: 'the port is already in use (another process, or another instance still stopping)',
  EACCES: 'permission denied (ports below 1024 need privileges)',
  EADDRNOTAVAIL: 'the address is not one of this host\'s',
  ENOTFOUND: 'the host name does not resolve',
};

/** The same codes on a unix socket mean other things: no port is involved. */
const SOCKET_REASONS: Record<string, string> = {
  EACCES: 'permission denied (the user running the sidecar must be able to write the directory)',
  EPERM: 'its group cannot be set (the user running the sidecar must be a member of listen.socketGroup)',
  ENOENT: 'the directory does not exist',
};

/**
 * A listener could not bind. The message names the listener and the config key that sets its
 * port. `run` exits 1, not 2: a port in use is often transient (a previous
 * instance still draining), and systemd and Kubernetes retry exit 1 but not 2.
 */
export class ListenError extends SidecarError {
  override name = 'ListenError';
  /** `port` undefined: `host` is the unix socket path of `listen.socket`. */
  constructor(listener: 'proxy' | 'admin', host: string, port: number | undefined, cause: unknown, credentialSet?: { id: string; path: ConfigPath }) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'error';
    const section = listener === 'proxy' ? 'listen' : 'admin';
    const reason = (port === undefined ? SOCKET_REASONS[code] : REASONS[code]) ?? (cause as Error).message;
    // A credential set's own listener is named by its key (credentials[1].listen: docs/credential-sets.md).
    if (credentialSet) {
      super('SIDECAR_ERR_LISTEN', 500, formatProblem([...credentialSet.path, 'listen'], `the listener of credential set ${credentialSet.id} cannot listen on ${port === undefined ? `the unix socket ${host}` : `${host}:${port}`}: ${reason}${code === 'error' ? '' : ` [${code}]`}`), { cause });
      return;
    }
    super('SIDECAR_ERR_LISTEN', 500, port === undefined
      ? formatProblem(['listen', 'socket'], `the proxy listener cannot listen on the unix socket ${host}: ${reason}${code === 'error' ? '' : ` [${code}]`}`)
      : formatProblem([section, 'port'], `the ${listener} listener cannot listen on ${host}:${port} (${section}.host): ${reason} [${code}]`), { cause });
  }
}
