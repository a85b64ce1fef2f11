/**
 * How long a unix socket path may be, and what creating it safely adds to it (the proxy's
 * local-socket.ts binds in a private directory next to the socket, then links it into place).
 */

/** The private directory's name next to the socket: this and six random characters. */
export const PRIVATE_DIR_PREFIX = '.b2b-';
/** What binding in the private directory adds to the socket's directory: `/.b2b-XXXXXX/s`. */
export const PRIVATE_PATH_EXTRA = 1 + PRIVATE_DIR_PREFIX.length + 6 + 2;
/** A unix socket path holds at most this many bytes (Linux's sun_path, 108 with its NUL). */
export const MAX_SOCKET_PATH_BYTES = 107;
