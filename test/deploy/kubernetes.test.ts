import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import { ServiceMonitor, type IServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { NetworkPolicy, type INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret, type ISecret } from 'kubernetes-models/v1/Secret';
import { Service, type IService } from 'kubernetes-models/v1/Service';
import type { IContainer } from 'kubernetes-models/v1/Container';
import type { IProbe } from 'kubernetes-models/v1/Probe';
import type { Config } from '../../src/config/schema.js';
import { loadConfig } from '../../src/config/load-config.js';

/**
 * deploy/kubernetes: every manifest validated against the Kubernetes (and prometheus-operator)
 * schemas, every field checked against the API types, and the Deployment's probes, ports, mounts
 * and grace period checked against the config the manifests ship (sidecar.yaml, loaded through
 * the real loader). kustomize is emulated for the features the directory uses (resources,
 * configMapGenerator, components with JSON 6902 patches) so the test needs no kubectl.
 */
const repo = fileURLToPath(new URL('../../', import.meta.url));
const K8S = join(repo, 'deploy/kubernetes');
const COMPONENTS = ['components/servicemonitor', 'components/pre-1.29'] as const;
const SIDECAR = 'b2b-sidecar';

type Manifest = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> } } & Record<string, unknown>;
/** A JSON 6902 patch given inline (`patch`), or a strategic merge patch file (`path`). */
interface Patch { target: { group?: string; version?: string; kind: string; name: string }; patch?: string; path?: string }
interface Kustomization {
  kind: string;
  resources?: string[];
  components?: string[];
  configMapGenerator?: Array<{ name: string; files?: string[] }>;
  patches?: Patch[];
  images?: Array<{ name: string; newName?: string; newTag?: string }>;
}

function readDocs(path: string): Manifest[] {
  const docs = parseAllDocuments(readFileSync(path, 'utf8'));
  return docs.map((doc) => {
    assert.deepEqual(doc.errors.map((e) => e.message), [], `${path}: YAML errors`);
    return doc.toJS() as Manifest;
  }).filter((d) => d !== null);
}

function readKustomization(dir: string): Kustomization {
  return parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Kustomization;
}

// ---- a JSON Patch (RFC 6902) subset: what kustomize applies for `patches:` given as a list ----
type Op = { op: 'test' | 'add' | 'remove' | 'replace' | 'move'; path: string; from?: string; value?: unknown };

function pointer(path: string): string[] {
  assert.ok(path.startsWith('/'), `JSON pointer ${path}`);
  return path.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function locate(doc: unknown, path: string): { parent: Record<string, unknown> | unknown[]; key: string } {
  const parts = pointer(path);
  const key = parts.pop()!;
  let parent: unknown = doc;
  for (const part of parts) {
    parent = Array.isArray(parent) ? parent[Number(part)] : (parent as Record<string, unknown> | undefined)?.[part];
    assert.ok(parent !== null && typeof parent === 'object', `JSON patch: ${path} has no parent`);
  }
  return { parent: parent as Record<string, unknown> | unknown[], key };
}

function getAt(doc: unknown, path: string): unknown {
  const { parent, key } = locate(doc, path);
  const value = Array.isArray(parent) ? parent[Number(key)] : parent[key];
  assert.ok(value !== undefined, `JSON patch: nothing at ${path}`);
  return value;
}

function removeAt(doc: unknown, path: string): unknown {
  const value = getAt(doc, path);
  const { parent, key } = locate(doc, path);
  if (Array.isArray(parent)) parent.splice(Number(key), 1);
  else delete parent[key];
  return value;
}

function addAt(doc: unknown, path: string, value: unknown): void {
  const { parent, key } = locate(doc, path);
  if (Array.isArray(parent)) parent.splice(key === '-' ? parent.length : Number(key), 0, value);
  else parent[key] = value;
}

function applyPatch(doc: unknown, ops: Op[]): void {
  for (const op of ops) {
    if (op.op === 'test') assert.deepEqual(getAt(doc, op.path), op.value, `JSON patch test ${op.path}`);
    else if (op.op === 'remove') removeAt(doc, op.path);
    else if (op.op === 'add') addAt(doc, op.path, structuredClone(op.value));
    else if (op.op === 'replace') { removeAt(doc, op.path); addAt(doc, op.path, structuredClone(op.value)); }
    else if (op.op === 'move') addAt(doc, op.path, removeAt(doc, op.from!));
    else assert.fail(`unsupported JSON patch op ${String((op as Op).op)}`);
  }
}

/**
 * A strategic merge patch as kustomize applies it to the parts these manifests use: maps merge
 * key by key, lists of named objects (containers, volumes, ports) merge by `name` (new names are
 * appended, existing ones merged), other lists and scalars are replaced. The patch's own
 * metadata.name is ignored (the target is chosen by `target`).
 */
function strategicMerge(into: Record<string, unknown>, patch: Record<string, unknown>, top = true): void {
  for (const [key, value] of Object.entries(patch)) {
    if (top && (key === 'metadata' || key === 'apiVersion' || key === 'kind')) continue;
    const current = into[key];
    if (Array.isArray(value) && Array.isArray(current) && value.every((v) => v && typeof v === 'object' && 'name' in v)) {
      for (const item of value as Array<Record<string, unknown>>) {
        const same = (current as Array<Record<string, unknown>>).find((c) => c.name === item.name);
        if (same) strategicMerge(same, item, false);
        else current.push(structuredClone(item));
      }
    } else if (value && typeof value === 'object' && !Array.isArray(value) && current && typeof current === 'object' && !Array.isArray(current)) {
      strategicMerge(current as Record<string, unknown>, value as Record<string, unknown>, false);
    } else {
      into[key] = structuredClone(value);
    }
  }
}

function matchesTarget(m: Manifest, t: Patch['target']): boolean {
  const [group, version] = m.apiVersion.includes('/') ? m.apiVersion.split('/') : ['', m.apiVersion];
  return m.kind === t.kind && m.metadata.name === t.name
    && (t.group === undefined || t.group === group) && (t.version === undefined || t.version === version);
}

/** `kustomize build` for what these directories use: resources, configMapGenerator, components, patches. */
function render(dir: string, components: readonly string[] = []): Manifest[] {
  const k = readKustomization(dir);
  const out: Manifest[] = [];
  for (const resource of k.resources ?? []) out.push(...readDocs(join(dir, resource)));
  for (const gen of k.configMapGenerator ?? []) {
    const data: Record<string, string> = {};
    for (const file of gen.files ?? []) data[basename(file)] = readFileSync(join(dir, file), 'utf8');
    out.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: gen.name }, data });
  }
  for (const component of [...(k.components ?? []), ...components]) {
    const cdir = join(dir, component);
    const c = readKustomization(cdir);
    assert.equal(c.kind, 'Component', `${component} is a kustomize Component`);
    for (const resource of c.resources ?? []) out.push(...readDocs(join(cdir, resource)));
    for (const p of c.patches ?? []) {
      const targets = out.filter((m) => matchesTarget(m, p.target));
      assert.equal(targets.length, 1, `${component}: the patch target ${p.target.kind}/${p.target.name} exists once`);
      if (p.path !== undefined) strategicMerge(targets[0]!, readDocs(join(cdir, p.path))[0]!);
      else applyPatch(targets[0], parse(p.patch!) as Op[]);
    }
  }
  return out;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'v1/Service': Service,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'monitoring.coreos.com/v1/ServiceMonitor': ServiceMonitor,
};

/** Where each kind's TypeScript interface lives, for the unknown-field check. */
const TYPES: Record<string, [module: string, type: string]> = {
  'apps/v1/Deployment': ['kubernetes-models/apps/v1/Deployment', 'IDeployment'],
  'v1/Service': ['kubernetes-models/v1/Service', 'IService'],
  'v1/ConfigMap': ['kubernetes-models/v1/ConfigMap', 'IConfigMap'],
  'v1/Secret': ['kubernetes-models/v1/Secret', 'ISecret'],
  'networking.k8s.io/v1/NetworkPolicy': ['kubernetes-models/networking.k8s.io/v1/NetworkPolicy', 'INetworkPolicy'],
  'monitoring.coreos.com/v1/ServiceMonitor': ['@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor', 'IServiceMonitor'],
};

const id = (m: Manifest) => `${m.apiVersion}/${m.kind}`;

function validateAll(manifests: Manifest[]): void {
  for (const m of manifests) {
    const Model = MODELS[id(m)];
    assert.ok(Model, `no schema for ${id(m)} (${m.metadata?.name})`);
    assert.doesNotThrow(() => new Model(m as never).validate(), (err: Error) => `${id(m)} ${m.metadata.name}: ${err.message}`);
  }
}

function only<T>(manifests: Manifest[], kind: string): T {
  const found = manifests.filter((m) => m.kind === kind);
  assert.equal(found.length, 1, `exactly one ${kind}`);
  return found[0] as unknown as T;
}

const base = render(K8S);
const secretExample = readDocs(join(K8S, 'secret.example.yaml'));
const deployment = only<IDeployment>(base, 'Deployment');
const pod = deployment.spec!.template;
const podSpec = pod.spec!;
const sidecar = (podSpec.initContainers ?? []).find((c) => c.name === SIDECAR)!;
const app = podSpec.containers.find((c) => c.name !== SIDECAR)!;
const raw = parse(readFileSync(join(K8S, 'sidecar.yaml'), 'utf8')) as { credentials: { apiKeyFile: string; passwordFile: string } };
let config: Config;

const tmp = mkdtempSync(join(tmpdir(), 'b2b-deploy-k8s-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

before(async () => {
  // The credential paths point into the pod; stand-in files through the *_FILE env vars.
  writeFileSync(join(tmp, 'api-key'), 'k\n');
  writeFileSync(join(tmp, 'password'), 'p\n');
  config = await loadConfig(join(K8S, 'sidecar.yaml'), { B2B_API_KEY_FILE: join(tmp, 'api-key'), B2B_PASSWORD_FILE: join(tmp, 'password') });
});

/** A probe's or port's target as a number, resolving container port names. */
function portOf(container: IContainer, port: number | string | undefined): number | undefined {
  if (typeof port === 'number') return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}

function probeTarget(container: IContainer, probe: IProbe | undefined): { path?: string; port?: number } {
  assert.ok(probe?.httpGet, `${container.name}: an httpGet probe`);
  return { path: probe.httpGet.path, port: portOf(container, probe.httpGet.port) };
}

function mountFor(container: IContainer, file: string) {
  const mount = (container.volumeMounts ?? []).find((m) => dirname(file) === m.mountPath);
  assert.ok(mount, `${container.name}: ${file} lies in no mounted directory`);
  return { mount, volume: podSpec.volumes?.find((v) => v.name === mount.name) };
}

function selects(selector: Record<string, string> | undefined, labels: Record<string, string> | undefined): boolean {
  return Object.entries(selector ?? {}).length > 0 && Object.entries(selector ?? {}).every(([k, v]) => labels?.[k] === v);
}

function dockerUser(): number {
  const m = /^USER\s+(\d+)/m.exec(readFileSync(join(repo, 'Dockerfile'), 'utf8'));
  assert.ok(m, 'Dockerfile USER');
  return Number(m[1]);
}

describe('deploy/kubernetes: schemas', () => {
  it('renders every resource and the generated ConfigMap, each valid against its schema', () => {
    assert.deepEqual(base.map(id).sort(), ['apps/v1/Deployment', 'networking.k8s.io/v1/NetworkPolicy', 'v1/ConfigMap', 'v1/Service']);
    validateAll(base);
    validateAll(secretExample);
  });

  for (const component of COMPONENTS) {
    it(`renders with ${component}, every object valid`, () => {
      validateAll(render(K8S, [component]));
    });
  }

  it('uses only fields the Kubernetes API types know (TypeScript excess-property check)', () => {
    // kubernetes-models' validate() accepts unknown keys, so a typo such as `restartPolicyy` would
    // pass it; an object literal checked with `satisfies` against the API interface does not.
    const variants: Array<[string, Manifest[]]> = [['base', base], ['secret.example.yaml', secretExample],
      ...COMPONENTS.map((c): [string, Manifest[]] => [c, render(K8S, [c])])];
    const imports = new Map<string, string>();
    const body: string[] = [];
    let n = 0;
    for (const [variant, manifests] of variants) {
      for (const m of manifests) {
        const type = TYPES[id(m)];
        assert.ok(type, `no type for ${id(m)}`);
        imports.set(type[1], `import type { ${type[1]} } from '${type[0]}';`);
        body.push(`// ${variant}: ${id(m)} ${m.metadata.name}`, `export const m${n++} = ${JSON.stringify(m, null, 1)} satisfies ${type[1]};`);
      }
    }
    // Inside the repository so the packages resolve from node_modules.
    mkdirSync(join(repo, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(repo, '.tmp', 'deploy-k8s-types-'));
    try {
      const source = [...imports.values(), ...body, ''].join('\n');
      writeFileSync(join(dir, 'manifests.ts'), source);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types: [] },
        files: ['manifests.ts'],
      }));
      const tsc = spawnSync(join(repo, 'node_modules/.bin/tsc'), ['-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
      // Name the manifest each error is in: the comment line above its object.
      const lines = source.split('\n');
      const explained = `${tsc.stdout}${tsc.stderr}`.replace(/manifests\.ts\((\d+),\d+\)/g, (whole, line: string) => {
        const above = lines.slice(0, Number(line)).reverse().find((l) => l.startsWith('// '));
        return `${whole} [${above?.slice(3) ?? '?'}]`;
      });
      assert.equal(tsc.status, 0, explained);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('deploy/kubernetes: agreement with sidecar.yaml', () => {
  it('ships a config that loads through the real loader, proxy on loopback, admin on all interfaces', () => {
    assert.equal(config.listen.host, '127.0.0.1', 'the proxy must not be reachable from outside the pod');
    assert.ok(['0.0.0.0', '::'].includes(config.admin.host), 'kubelet probes and Prometheus connect to the pod IP');
  });

  it('runs the sidecar as a native sidecar: an init container with restartPolicy Always', () => {
    assert.ok(sidecar, `initContainers has ${SIDECAR}`);
    assert.equal(sidecar.restartPolicy, 'Always');
    assert.ok(!podSpec.containers.some((c) => c.name === SIDECAR));
  });

  it('probes the admin port from the config: startup and liveness /healthz, readiness /readyz', () => {
    const port = config.admin.port;
    assert.deepEqual(probeTarget(sidecar, sidecar.startupProbe), { path: '/healthz', port });
    assert.deepEqual(probeTarget(sidecar, sidecar.livenessProbe), { path: '/healthz', port });
    assert.deepEqual(probeTarget(sidecar, sidecar.readinessProbe), { path: '/readyz', port });
    assert.deepEqual(sidecar.ports?.map((p) => [p.name, p.containerPort]), [['metrics', port]], 'only the admin port is declared');
  });

  it('reads its config from the generated ConfigMap, mounted where --config points', () => {
    const args = sidecar.args ?? [];
    const configPath = args[args.indexOf('--config') + 1];
    assert.ok(configPath, 'args: run --config FILE');
    const { mount, volume } = mountFor(sidecar, configPath);
    assert.equal(mount.readOnly, true);
    assert.equal(mount.subPath, undefined);
    const configMap = only<{ metadata: { name: string }; data: Record<string, string> }>(base, 'ConfigMap');
    assert.equal(volume?.configMap?.name, configMap.metadata.name);
    assert.equal(configMap.data[posix.basename(configPath)], readFileSync(join(K8S, 'sidecar.yaml'), 'utf8'));
  });

  it('finds apiKeyFile and passwordFile in the Secret volume, mounted as a directory', () => {
    const secret = secretExample[0] as unknown as ISecret;
    for (const file of [raw.credentials.apiKeyFile, raw.credentials.passwordFile]) {
      const { mount, volume } = mountFor(sidecar, file);
      assert.equal(mount.subPath, undefined, 'subPath mounts never see Secret updates, so rotation would not work');
      assert.equal(mount.readOnly, true);
      assert.equal(volume?.secret?.secretName, secret.metadata?.name);
      assert.ok(posix.basename(file) in (secret.stringData ?? {}), `the Secret has the key ${posix.basename(file)}`);
      assert.equal(volume?.secret?.items, undefined, 'all keys projected as files');
    }
    assert.ok(!(app.volumeMounts ?? []).some((m) => m.name === mountFor(sidecar, raw.credentials.apiKeyFile).mount.name), 'the app never sees the credentials');
  });

  it('keeps the credentials out of the kustomization and readable only by the sidecar group', () => {
    const k = readKustomization(K8S);
    assert.ok(!(k.resources ?? []).includes('secret.example.yaml'), 'applying would overwrite real credentials');
    assert.ok(!JSON.stringify(k).includes('secretGenerator'), 'a generated Secret name would turn rotation into a rollout');
    const volume = mountFor(sidecar, raw.credentials.apiKeyFile).volume;
    assert.equal(volume?.secret?.defaultMode, 0o440);
    assert.equal(podSpec.securityContext?.fsGroup, dockerUser());
  });

  it('locks the sidecar down: image user, non-root, read-only root, no escalation, no capabilities, RuntimeDefault', () => {
    const sc = sidecar.securityContext!;
    assert.equal(sc.runAsNonRoot, true);
    assert.equal(sc.runAsUser, dockerUser(), 'the same numeric user as the Dockerfile');
    assert.equal(sc.readOnlyRootFilesystem, true);
    assert.equal(sc.allowPrivilegeEscalation, false);
    assert.deepEqual(sc.capabilities?.drop, ['ALL']);
    assert.equal((sc.seccompProfile ?? podSpec.securityContext?.seccompProfile)?.type, 'RuntimeDefault');
    assert.equal(podSpec.securityContext?.runAsNonRoot, true);
    assert.equal(podSpec.automountServiceAccountToken, false);
  });

  it('requests CPU and memory and limits memory', () => {
    const r = sidecar.resources!;
    assert.equal(r.requests?.cpu, '50m');
    assert.equal(r.requests?.memory, '96Mi');
    assert.equal(r.limits?.memory, '256Mi');
  });

  it('gives the pod longer to terminate than shutdown.delaySeconds + timeoutSeconds', () => {
    const grace = podSpec.terminationGracePeriodSeconds ?? 30;
    const drain = config.shutdown.delaySeconds + config.shutdown.timeoutSeconds;
    assert.ok(config.shutdown.delaySeconds > 0, 'a few seconds of delay for the app to notice');
    assert.ok(grace > drain, `terminationGracePeriodSeconds ${grace} must exceed ${drain}`);
  });

  it('points the app at the proxy listener on loopback', () => {
    const url = app.env?.find((e) => /URL$/.test(e.name))?.value;
    assert.equal(url, `http://127.0.0.1:${config.listen.port}`);
  });

  it('maps every image of the Deployment in the kustomization', () => {
    const mapped = new Set((readKustomization(K8S).images ?? []).map((i) => i.name));
    for (const c of [...podSpec.containers, ...(podSpec.initContainers ?? [])]) assert.ok(mapped.has(c.image!), `images: entry for ${c.image}`);
  });
});

describe('deploy/kubernetes: Prometheus and network', () => {
  it('annotates the pod for annotation-based scraping of the admin port', () => {
    const a = pod.metadata?.annotations ?? {};
    assert.equal(a['prometheus.io/scrape'], 'true');
    assert.equal(a['prometheus.io/port'], String(config.admin.port));
    assert.equal(a['prometheus.io/path'], '/metrics');
  });

  it('exposes the admin port through a Service port named metrics', () => {
    const service = only<IService>(base, 'Service');
    assert.ok(selects(service.spec?.selector, pod.metadata?.labels), 'the Service selects the pod');
    const port = service.spec?.ports?.find((p) => p.name === 'metrics');
    assert.equal(port?.port, config.admin.port);
    // Numeric: named ports of native sidecars did not reach Service endpoints before 1.32.
    assert.equal(port?.targetPort, config.admin.port);
  });

  it('has a ServiceMonitor (component) that selects that Service and port, and drops the scrape annotation', () => {
    const rendered = render(K8S, ['components/servicemonitor']);
    const monitor = only<IServiceMonitor>(rendered, 'ServiceMonitor');
    const service = only<IService>(rendered, 'Service');
    assert.ok(selects(monitor.spec.selector.matchLabels, service.metadata?.labels));
    assert.deepEqual(monitor.spec.endpoints?.map((e) => [e.port, e.path]), [['metrics', '/metrics']]);
    const annotations = only<IDeployment>(rendered, 'Deployment').spec!.template.metadata?.annotations ?? {};
    assert.equal(annotations['prometheus.io/scrape'], undefined, 'scraped once, not twice');
  });

  it('lets only Prometheus reach the admin port', () => {
    const policy = only<INetworkPolicy>(base, 'NetworkPolicy');
    assert.ok(selects(policy.spec?.podSelector?.matchLabels, pod.metadata?.labels));
    assert.ok(policy.spec?.policyTypes?.includes('Ingress'));
    const rules = policy.spec?.ingress ?? [];
    const toAdmin = rules.filter((r) => (r.ports ?? []).some((p) => p.port === config.admin.port) || r.ports === undefined);
    assert.equal(toAdmin.length, 1, 'one rule covers the admin port');
    const from = toAdmin[0]!.from ?? [];
    assert.ok(from.length > 0, 'restricted to some peers');
    for (const peer of from) {
      assert.ok(peer.namespaceSelector?.matchLabels && peer.podSelector?.matchLabels, 'both a namespace and a pod selector (AND)');
      assert.equal(peer.ipBlock, undefined);
    }
    const appPort = app.ports?.[0]?.containerPort;
    assert.ok(rules.some((r) => r.from === undefined && r.ports?.some((p) => p.port === appPort)), 'the app port stays open');
  });
});

describe('deploy/kubernetes: components/pre-1.29', () => {
  const rendered = render(K8S, ['components/pre-1.29']);
  const spec = only<IDeployment>(rendered, 'Deployment').spec!.template.spec!;
  const moved = spec.containers[0]!;

  it('runs the sidecar first among the regular containers, without restartPolicy', () => {
    assert.equal(moved.name, SIDECAR);
    assert.equal(moved.restartPolicy, undefined);
    assert.ok(!(spec.initContainers ?? []).some((c) => c.name === SIDECAR));
    const { lifecycle: _added, ...rest } = moved;
    const { restartPolicy: _removed, ...original } = sidecar;
    assert.deepEqual(rest, original, 'otherwise unchanged');
  });

  it('holds the app back until the sidecar answers /healthz on the admin port', () => {
    const script = (moved.lifecycle?.postStart?.exec?.command ?? []).join(' ');
    assert.match(script, /^node -e /);
    assert.ok(script.includes(`http://127.0.0.1:${config.admin.port}/healthz`), script);
  });

  it('delays the sidecar\'s SIGTERM and still fits in the grace period', () => {
    const command = moved.lifecycle?.preStop?.exec?.command ?? [];
    assert.equal(command[0], 'sleep');
    const hold = Number(command[1]);
    assert.ok(hold > 0);
    const total = hold + config.shutdown.delaySeconds + config.shutdown.timeoutSeconds;
    assert.ok((spec.terminationGracePeriodSeconds ?? 30) > total, `terminationGracePeriodSeconds must exceed ${total}`);
  });

  it('is not enabled by default', () => {
    assert.ok(!(readKustomization(K8S).components ?? []).length);
    assert.ok(existsSync(join(K8S, 'components/pre-1.29/kustomization.yaml')));
  });
});

describe('deploy/kubernetes: components/add-to-deployment (the sidecar added to an existing Deployment)', () => {
  const overlay = join(repo, 'test/fixtures/k8s-existing-app');
  const rendered = render(overlay);
  const mine = rendered.find((m) => m.kind === 'Deployment')!;
  const example = render(K8S).find((m) => m.kind === 'Deployment')! as unknown as { spec: { template: { spec: { initContainers: unknown[]; volumes: unknown[] } } } };
  const spec = (mine as unknown as { spec: { template: { spec: Record<string, unknown> & { containers: Array<{ name: string }>; initContainers: Array<{ name: string }>; volumes: Array<{ name: string }>; securityContext: Record<string, unknown> } } } }).spec.template.spec;

  it('adds the sidecar, exactly as the example runs it, to the user\'s own Deployment and creates nothing of the example app', () => {
    assert.equal(mine.metadata.name, 'my-app');
    assert.deepEqual(rendered.map((m) => `${m.kind}/${m.metadata.name}`).sort(), ['ConfigMap/b2b-sidecar-config', 'Deployment/my-app']);
    assert.deepEqual(spec.initContainers.map((c) => c.name), ['migrate', SIDECAR], 'the user\'s init container stays first');
    assert.deepEqual(spec.initContainers[1], example.spec.template.spec.initContainers[0]);
    assert.ok(example.spec.template.spec.volumes.every((v) => spec.volumes.some((w) => JSON.stringify(w) === JSON.stringify(v))));
  });

  it('leaves the user\'s containers, volumes and pod settings as they were, adding fsGroup for the Secret files', () => {
    const original = readDocs(join(overlay, 'my-app.yaml'))[0] as unknown as { spec: { template: { spec: typeof spec } } };
    assert.deepEqual(spec.containers, original.spec.template.spec.containers);
    assert.deepEqual(spec.volumes.slice(0, original.spec.template.spec.volumes.length), original.spec.template.spec.volumes);
    assert.equal(spec.securityContext.fsGroup, 65532);
    assert.equal(spec.securityContext.runAsNonRoot, true, 'the user\'s own pod securityContext is kept');
    assert.equal(spec.serviceAccountName, 'my-app');
  });

  it('validates as a Kubernetes Deployment', () => {
    assert.doesNotThrow(() => new Deployment(mine as never).validate());
  });
});
