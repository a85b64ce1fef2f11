/**
 * Where to connect for a bind address: a wildcard bind is reached on loopback (a container's
 * HEALTHCHECK, `wait` and `doctor` run in the same network namespace), anything else as
 * configured, without IPv6 brackets.
 */
export function connectHost(bind: string): string {
  if (bind === '0.0.0.0' || bind === '') return '127.0.0.1';
  if (bind === '::' || bind === '[::]') return '::1';
  return bind.replace(/^\[(.*)\]$/, '$1');
}

/** `http://host:port` for a host {@link connectHost} returned (IPv6 in brackets). */
export function httpOrigin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
