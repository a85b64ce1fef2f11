import { readFileSync } from 'node:fs';
import { pemCertificatesProblem } from '../shared/tls.js';

/**
 * What an in-cluster client finds by itself (kubernetes.io, "Accessing the Kubernetes API from a
 * Pod"; client-go's rest.InClusterConfig): the API server's address in KUBERNETES_SERVICE_HOST and
 * _PORT, the namespace and the CA in the service-account volume. Read once, at open: a fault here is
 * the pod's setup, reported before any request.
 */
export interface InClusterEnv {
  readonly KUBERNETES_SERVICE_HOST?: string;
  readonly KUBERNETES_SERVICE_PORT?: string;
}

/** The API server's URL: the one given, else the in-cluster service address from the environment kubelet sets. */
export function apiServerUrl(apiServer: string | undefined, env: InClusterEnv | undefined): URL {
  if (apiServer) return new URL(apiServer);
  const host = env?.KUBERNETES_SERVICE_HOST;
  const port = env?.KUBERNETES_SERVICE_PORT;
  if (!host || !port) {
    throw new Error('fleet store kubernetes: no API server address (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset: not in a pod?)');
  }
  // An IPv6 service address needs brackets in a URL (client-go joins them with net.JoinHostPort).
  return new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`);
}

/** The pod's namespace from the service-account volume. */
export function readNamespace(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch (err) {
    throw new Error(`fleet store kubernetes: no namespace given and ${file} could not be read (${(err as NodeJS.ErrnoException).code ?? 'unreadable'}); set fleet.kubernetesNamespace`);
  }
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(text)) throw new Error(`fleet store kubernetes: ${file} holds no namespace name`);
  return text;
}

/** The cluster CA (PEM certificates only, checked). */
export function readCa(file: string): string {
  let pem: string;
  try {
    pem = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`fleet store kubernetes: the cluster CA ${file} could not be read (${(err as NodeJS.ErrnoException).code ?? 'unreadable'})`);
  }
  const problem = pemCertificatesProblem(pem);
  if (problem) throw new Error(`fleet store kubernetes: the cluster CA ${file} ${problem}`);
  return pem;
}
