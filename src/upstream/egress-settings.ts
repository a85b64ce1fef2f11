import { FileRefusedError, MAX_SECRET_FILE_BYTES, readBoundedFile } from '../shared/bounded-file.js';
import { loadClientCertificate, type ClientCertificate, type ClientCertificateFiles } from '../shared/client-certificate.js';
import { resolveEgress, type EgressRoute, type Environment } from '../shared/egress-proxy.js';
import { watchFiles, type FileWatch } from '../shared/file-watch.js';
import type { SecretSet } from '../shared/secrets.js';
import type { TrustedCas } from '../shared/tls.js';
import type { UpstreamSettings } from '../shared/upstream-keys.js';
import type { Logger } from '../observability/logger.js';
import type { TunnelFailure } from './connect-tunnel.js';
import { createEgress, type Egress } from './egress.js';

/** The keys of an upstream that shape the way out (declared in shared/upstream-keys.ts). */
export type EgressSettings = Pick<UpstreamSettings, 'proxy' | 'proxyAuthFile' | 'certFile' | 'keyFile' | 'keyPassphraseFile'>;

/** A running egress: its files re-read on change and on SIGHUP (`reload`), like the credential files. */
export interface EgressHandle {
  readonly egress: Egress;
  /** How connections leave, for the start log and doctor: "via proxy http://squid:3128 (HTTPS_PROXY)" or "direct (...)". */
  readonly path: string;
  /** The client certificate in use, if any. */
  certificate(): ClientCertificate | undefined;
  /**
   * Re-reads the proxy credentials and the client certificate; a refused file keeps the current
   * values. `fromWatch`: a file changed; a refused pair is then given {@link PAIR_GRACE_MS} for the
   * other file of the pair before it is reported.
   */
  reload(fromWatch?: boolean): Promise<void>;
  close(): void;
}

export interface EgressDeps {
  /** `service` or `localization`: the config prefix, the metric label. */
  route: string;
  target: URL;
  ca: TrustedCas | undefined;
  env: Environment;
  secrets: SecretSet;
  logger?: Logger | undefined;
  /** Watch the files (run); commands that connect once do not. */
  watch?: boolean;
  onTunnelFailure?: (reason: TunnelFailure) => void;
  now?: () => Date;
  /** Aborted when the process stops during start-up: a key being decrypted is given up. */
  signal?: AbortSignal | undefined;
  /** How long a changed, refused pair waits for its other file; {@link PAIR_GRACE_MS} unless set (tests). */
  pairGraceMs?: number;
}

/**
 * A certificate and its key are two files, replaced one after the other (docs/runbook.md,
 * B2BSidecarClientCertificateExpiring): between the two writes the pair does not match. A change
 * seen by the watch that leaves a refused pair is re-read once more after this long, and reported
 * only if it is still refused then; the current pair stays in use meanwhile.
 */
export const PAIR_GRACE_MS = 10_000;

/**
 * Resolves the proxy and loads the proxy credentials and client certificate. Throws (naming the
 * key or file) when any cannot be used, so `run` stops before it starts as `check-config` would.
 */
export async function startEgress(settings: EgressSettings, deps: EgressDeps): Promise<EgressHandle> {
  const { route, secrets, logger } = deps;
  const now = deps.now ?? (() => new Date());
  const resolved: EgressRoute = resolveEgress(settings.proxy, `${route}.proxy`, deps.target, deps.env);
  const proxy = resolved.proxy;
  if (proxy?.urlAuth) registerAuth(secrets, proxy.urlAuth);
  const authFile = proxy ? settings.proxyAuthFile : undefined;
  const files: ClientCertificateFiles | undefined = settings.certFile && settings.keyFile
    ? { key: route, certFile: settings.certFile, keyFile: settings.keyFile, keyPassphraseFile: settings.keyPassphraseFile }
    : undefined;

  let auth = authFile ? await readProxyAuth(authFile, route) : proxy?.urlAuth;
  if (authFile && auth) registerAuth(secrets, auth);
  let certificate = files ? await loadClientCertificate(files, now(), undefined, { signal: deps.signal }) : undefined;
  // Ends a decryption a reload started when the egress closes (its worker must not hold a stop).
  const closing = new AbortController();
  if (certificate?.passphrase) secrets.add(certificate.passphrase);

  const lastLogged = new Map<TunnelFailure, number>();
  const egress = createEgress({
    route, ca: deps.ca, proxy,
    proxyAuth: () => auth,
    clientCertificate: () => certificate,
    onTunnelFailure: (reason, message) => {
      deps.onTunnelFailure?.(reason);
      // The proxy's failures reach clients only as a 502/504: say them in the log, once a minute per reason.
      const now = Date.now();
      if ((lastLogged.get(reason) ?? -Infinity) + 60_000 <= now) {
        lastLogged.set(reason, now);
        logger?.warn('egress proxy failed', { route, reason, detail: message });
      }
    },
  });

  let running: Promise<void> | undefined;
  let again = false;
  let againExplicit = false;
  let graceTimer: NodeJS.Timeout | undefined;
  const pairGraceMs = deps.pairGraceMs ?? PAIR_GRACE_MS;
  const reloadOnce = async (fromWatch: boolean) => {
    if (authFile) {
      try {
        const next = await readProxyAuth(authFile, route);
        registerAuth(secrets, next);
        if (next !== auth) logger?.info('proxy credentials changed; new tunnels use them', { key: `${route}.proxyAuthFile` });
        auth = next;
      } catch (err) {
        logger?.warn('proxy credential re-read refused; keeping the current ones', { key: `${route}.proxyAuthFile`, reason: (err as Error).message });
      }
    }
    if (files) {
      try {
        // The same bytes as the pair in use give it back undecrypted: a key is decrypted once per change.
        const next = await loadClientCertificate(files, now(), certificate, { signal: closing.signal });
        if (next.passphrase) secrets.add(next.passphrase);
        // Any changed byte counts: a new intermediate under the same leaf, or a file finished after a cut-off write.
        if (next !== certificate) {
          logger?.info('client certificate changed; new connections present it', { key: `${route}.certFile`, subject: next.subject, notAfter: next.notAfter.toISOString() });
          certificate = next;
        }
      } catch (err) {
        if (closing.signal.aborted) return;
        if (fromWatch && pairGraceMs > 0 && !graceTimer) {
          // Half a rotation, most likely: the other file follows; the final verdict comes after the grace.
          logger?.info('client certificate re-read refused for now; waiting for the other file of the pair', { key: `${route}.certFile`, waitSeconds: pairGraceMs / 1000 });
          graceTimer = setTimeout(() => {
            graceTimer = undefined;
            void reload();
          }, pairGraceMs);
          graceTimer.unref();
          return;
        }
        if (graceTimer && fromWatch) return; // another change within the grace: its re-read reports
        logger?.warn('client certificate re-read refused; keeping the current one', { key: `${route}.certFile`, reason: (err as Error).message });
      }
    }
  };
  const reload = async (fromWatch = false): Promise<void> => {
    if (running) {
      again = true;
      if (!fromWatch) againExplicit = true;
      return running;
    }
    running = (async () => {
      let watched = fromWatch;
      do {
        again = false;
        await reloadOnce(watched);
        watched = !againExplicit;
        againExplicit = false;
      } while (again);
    })().finally(() => { running = undefined; });
    return running;
  };

  const watched = [authFile, files?.certFile, files?.keyFile, files?.keyPassphraseFile].filter((f): f is string => typeof f === 'string');
  let watch: FileWatch | undefined;
  if (deps.watch && watched.length > 0) {
    watch = watchFiles(watched, () => void reload(true), {
      debounceMs: 200, persistent: false,
      onError: (dir, err) => logger?.warn('cannot watch a directory; changes apply on SIGHUP only', { dir, reason: err.message }),
    });
  }
  return {
    egress,
    path: proxy ? `via proxy ${proxy.display} (${proxy.source})` : `direct (${'direct' in resolved ? resolved.direct : ''})`,
    certificate: () => certificate,
    reload,
    close: () => {
      closing.abort();
      clearTimeout(graceTimer);
      watch?.close();
    },
  };
}

async function readProxyAuth(file: string, route: string): Promise<string> {
  let text: string;
  try {
    text = await readBoundedFile(file, MAX_SECRET_FILE_BYTES);
  } catch (err) {
    throw new Error(`${route}.proxyAuthFile ${file} ${err instanceof FileRefusedError ? err.reason : (err as Error).message}`);
  }
  const value = text.trim();
  if (!value.includes(':')) throw new Error(`${route}.proxyAuthFile ${file} must hold user:password`);
  return value;
}

/** The password and the whole `user:password` (and its Basic form) are scrubbed from every log line. */
function registerAuth(secrets: SecretSet, auth: string): void {
  secrets.add(auth.slice(auth.indexOf(':') + 1));
  secrets.add(auth);
  secrets.add(Buffer.from(auth, 'utf8').toString('base64'));
}
