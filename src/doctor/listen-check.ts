import { createServer } from 'node:net';
import { answersAsSidecar } from './running-sidecar.js';
import type { DoctorStep } from './doctor-report.js';

/** One address `run` will bind: the proxy listener or the admin listener. */
export interface ListenTarget {
  /** The config section: `listen` or `admin`. */
  key: 'listen' | 'admin';
  host: string;
  port: number;
}

/**
 * Whether `run` could bind its listeners here: each address is bound for a moment and released.
 * An address in use is fine when a b2b-sidecar answers `/healthz` on the admin address (doctor
 * usually runs beside the sidecar it diagnoses); anything else holding it would make `run` exit 1.
 */
export async function checkListenAddresses(targets: readonly ListenTarget[], admin: ListenTarget, timeoutMs = 2000): Promise<DoctorStep> {
  const parts: string[] = [];
  const problems: Array<{ text: string; hint: string }> = [];
  let sidecarUp: boolean | undefined;
  for (const t of targets) {
    const where = `${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}`;
    if (t.port === 0) {
      parts.push(`${where} (${t.key}: a free port is picked at start)`);
      continue;
    }
    const code = await tryBind(t.host, t.port);
    if (code === undefined) {
      parts.push(`${where} (${t.key}) free`);
    } else if (code === 'EADDRINUSE') {
      sidecarUp ??= await answersAsSidecar(admin.host, admin.port, timeoutMs);
      if (sidecarUp) parts.push(`${where} (${t.key}) in use by the running b2b-sidecar (its /healthz answers)`);
      else problems.push({ text: `${where} (${t.key}) is in use by another program`, hint: `run would exit 1: stop that program, or set ${t.key}.port to a free port (ss -ltnp shows who holds it)` });
    } else if (code === 'EADDRNOTAVAIL') {
      problems.push({ text: `${where} (${t.key}): ${t.host} is not an address of this host`, hint: `set ${t.key}.host to 127.0.0.1, an address of this host, or 0.0.0.0` });
    } else if (code === 'EACCES') {
      problems.push({ text: `${where} (${t.key}): binding needs privileges this user lacks`, hint: `use a port above 1023 in ${t.key}.port` });
    } else {
      problems.push({ text: `${where} (${t.key}) cannot be bound (${code})`, hint: `check ${t.key}.host and ${t.key}.port` });
    }
  }
  if (problems.length === 0) return { step: 'listen', ok: true, detail: parts.join('; ') };
  return { step: 'listen', ok: false, detail: [...problems.map((p) => p.text), ...parts].join('; '), hint: problems.map((p) => p.hint).join('; ') };
}

/** undefined when the address could be bound (and was released at once), else the error code. */
function tryBind(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}
