import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { parse, parseAllDocuments, stringify } from 'yaml';
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
import { kubectlVersion, kustomize, render, type Manifest } from '../helpers/kustomize.js';

/**
 * deploy/kubernetes: every manifest validated against the Kubernetes (and prometheus-operator)
 * schemas, every field checked against the API types, and the Deployment's probes, ports, mounts
 * and grace period checked against the config the manifests ship (sidecar.yaml, loaded through
 * the real loader). Rendered by the real kustomize (`kubectl kustomize`, test/helpers/kustomize.ts
 * says which binary and where it comes from), so what is asserted is what `kubectl apply -k` applies.
 */
const repo = fileURLToPath(new URL('../../', import.meta.url));
const K8S = join(repo, 'deploy/kubernetes');
const COMPONENTS = ['components/servicemonitor', 'components/pre-1.29'] as const;
/** The components deploy/kubernetes/kustomization.yaml lists as shipped. */
const SHIPPED = ['components/scrape-annotations'] as const;
const SIDECAR = 'b2b-sidecar';

interface Kustomization {
  kind: string;
  resources?: string[];
  components?: string[];
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

const tmp = mkdtempSync(join(tmpdir(), 'b2b-deploy-k8s-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/**
 * A kustomization of its own in `tmp`; `resources` and `components` may name folders by absolute
 * path (made relative: kustomize refuses absolute ones), files it names are copied there (kustomize
 * reads no file outside its folder).
 */
function overlay(name: string, kustomization: Record<string, unknown> & { resources?: string[]; components?: string[] }, files: Record<string, string> = {}): string {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  const rel = (paths: string[] | undefined) => paths?.map((p) => (p.startsWith('/') ? relative(dir, p) : p));
  kustomization = { ...kustomization, resources: rel(kustomization.resources) ?? [], ...(kustomization.components ? { components: rel(kustomization.components) } : {}) };
  writeFileSync(join(dir, 'kustomization.yaml'), stringify(kustomization));
  for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
  return dir;
}

/**
 * deploy/kubernetes as shipped, or with its `components:` list edited as a user edits it (a copy of
 * its kustomization and the files it reads, the components where they are).
 */
function renderK8s(components: readonly string[] = SHIPPED): Manifest[] {
  if (components === SHIPPED) return render(K8S);
  const kustomization = parse(readFileSync(join(K8S, 'kustomization.yaml'), 'utf8')) as Record<string, unknown> & { resources: string[] };
  const files = Object.fromEntries([...kustomization.resources, 'sidecar.yaml'].map((f) => [f, readFileSync(join(K8S, f), 'utf8')]));
  return render(overlay(`base-with-${components.map((c) => basename(c)).join('-') || 'none'}`, { ...kustomization, components: components.map((c) => join(K8S, c)) }, files));
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

const base = renderK8s();
const secretExample = readDocs(join(K8S, 'secret.example.yaml'));
const deployment = only<IDeployment>(base, 'Deployment');
const pod = deployment.spec!.template;
const podSpec = pod.spec!;
const sidecar = (podSpec.initContainers ?? []).find((c) => c.name === SIDECAR)!;
const app = podSpec.containers.find((c) => c.name !== SIDECAR)!;
const raw = parse(readFileSync(join(K8S, 'sidecar.yaml'), 'utf8')) as { credentials: { apiKeyFile: string; passwordFile: string } };
let config: Config;

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
    assert.deepEqual(base.map(id).sort(), ['apps/v1/Deployment', 'networking.k8s.io/v1/NetworkPolicy', 'v1/ConfigMap']);
    validateAll(base);
    validateAll(secretExample);
  });

  for (const component of COMPONENTS) {
    it(`renders with ${component}, every object valid`, () => {
      validateAll(renderK8s([component]));
    });
  }

  it('uses only fields the Kubernetes API types know (TypeScript excess-property check)', () => {
    // kubernetes-models' validate() accepts unknown keys, so a typo such as `restartPolicyy` would
    // pass it; an object literal checked with `satisfies` against the API interface does not.
    const variants: Array<[string, Manifest[]]> = [['base', base], ['secret.example.yaml', secretExample],
      ...COMPONENTS.map((c): [string, Manifest[]] => [c, renderK8s([c])]),
      ['components/add-to-deployment on test/fixtures/k8s-existing-app', render(join(repo, 'test/fixtures/k8s-existing-app'))]];
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
    assert.deepEqual(sidecar.ports?.map((p) => [p.name, p.containerPort]), [['b2b-admin', port]], 'only the admin port is declared, named for the sidecar (port names are unique in a pod)');
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

  it('resolves every image of the Deployment through the kustomization\'s images: list', () => {
    const mapped = new Set((readKustomization(K8S).images ?? []).map((i) => `${i.newName}:${i.newTag}`));
    for (const c of [...podSpec.containers, ...(podSpec.initContainers ?? [])]) assert.ok(mapped.has(c.image!), `${c.name}: ${c.image} comes from an images: entry`);
  });
});

describe('deploy/kubernetes: Prometheus and network', () => {
  it('annotates the pod for annotation-based scraping of the admin port', () => {
    const a = pod.metadata?.annotations ?? {};
    assert.equal(a['prometheus.io/scrape'], 'true');
    assert.equal(a['prometheus.io/port'], String(config.admin.port));
    assert.equal(a['prometheus.io/path'], '/metrics');
  });

  it('has a ServiceMonitor (component, instead of scrape-annotations) selecting a Service of the admin port, named as before', () => {
    const rendered = renderK8s(['components/servicemonitor']);
    const monitor = only<IServiceMonitor>(rendered, 'ServiceMonitor');
    const service = only<IService>(rendered, 'Service');
    assert.equal(service.metadata?.name, 'legacy-app-b2b-sidecar');
    assert.deepEqual(service.metadata?.labels, { 'app.kubernetes.io/name': 'legacy-app', 'app.kubernetes.io/component': 'b2b-sidecar' });
    assert.ok(selects(monitor.spec.selector.matchLabels, service.metadata?.labels));
    assert.ok(selects(service.spec?.selector, pod.metadata?.labels), 'the Service selects the pod');
    const port = service.spec?.ports?.find((p) => p.name === 'metrics');
    assert.equal(port?.port, config.admin.port);
    // Numeric: named ports of native sidecars did not reach Service endpoints before 1.32.
    assert.equal(port?.targetPort, config.admin.port);
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
  const rendered = renderK8s(['components/pre-1.29']);
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
    assert.deepEqual(readKustomization(K8S).components, [...SHIPPED]);
    assert.ok(existsSync(join(K8S, 'components/pre-1.29/kustomization.yaml')));
  });
});


describe('deploy/kubernetes: components/add-to-deployment onto an existing app (test/fixtures/k8s-existing-app)', () => {
  const FIXTURE = join(repo, 'test/fixtures/k8s-existing-app');
  const COMPONENT = join(K8S, 'components/add-to-deployment');
  const rendered = render(FIXTURE);
  const mine = only<IDeployment>(rendered, 'Deployment');
  const spec = mine.spec!.template.spec!;
  const original = readDocs(join(FIXTURE, 'my-app.yaml'))[0] as unknown as IDeployment;
  const originalSpec = original.spec!.template.spec!;
  const added = (spec.initContainers ?? []).find((c) => c.name === SIDECAR)!;
  const appConfig = parse(readFileSync(join(FIXTURE, 'sidecar.yaml'), 'utf8')) as { listen: { port: number }; admin: { port: number } };

  it('renders with the real kustomize (kubectl kustomize, kustomize v5)', (t) => {
    const v = kubectlVersion();
    t.diagnostic(`kubectl ${v.kubectl}, kustomize ${v.kustomize}, ${v.path}`);
    assert.match(v.kustomize, /^v[5-9]\./, 'components and replacements need kustomize v5 (kubectl 1.27+)');
  });

  it('adds the sidecar, exactly as the example runs it, to a Deployment of another name, and nothing of the example app', () => {
    assert.equal(mine.metadata?.name, 'orders-service');
    assert.deepEqual(rendered.map((m) => m.kind).sort(), ['ConfigMap', 'Deployment']);
    assert.match(only<Manifest>(rendered, 'ConfigMap').metadata.name, /^b2b-sidecar-config-[a-z0-9]+$/);
    assert.deepEqual(added, sidecar, 'the same init container as deploy/kubernetes/deployment.yaml (image resolved the same way)');
    for (const volume of podSpec.volumes ?? []) {
      if (volume.name.startsWith(SIDECAR)) assert.deepEqual(spec.volumes?.find((v) => v.name === volume.name), volume);
    }
    // kustomize puts the patch's list items first: the sidecar starts before the app's own init
    // containers, which can then use it too (README.md of the component says so).
    assert.deepEqual((spec.initContainers ?? []).map((c) => c.name), [SIDECAR, 'migrate']);
    assert.doesNotThrow(() => new Deployment(mine as never).validate());
  });

  it('keeps the app\'s fsGroup (2000), pod securityContext, containers, volumes (its own "config" too), init containers and annotations (its prometheus.io/* too)', () => {
    assert.deepEqual(spec.securityContext, originalSpec.securityContext);
    assert.equal(spec.securityContext?.fsGroup, 2000);
    assert.deepEqual(spec.containers, originalSpec.containers);
    for (const volume of originalSpec.volumes ?? []) assert.deepEqual(spec.volumes?.find((v) => v.name === volume.name), volume, volume.name);
    assert.deepEqual(spec.initContainers?.find((c) => c.name === 'migrate'), originalSpec.initContainers?.[0]);
    assert.equal(spec.serviceAccountName, 'orders-service');
    assert.deepEqual(mine.spec!.template.metadata?.annotations, original.spec!.template.metadata?.annotations);
    assert.equal(mine.spec!.template.metadata?.annotations?.['prometheus.io/port'], '8081', 'the fixture scrapes its own metrics');
    assert.deepEqual(mine.spec!.selector, original.spec!.selector);
    assert.deepEqual(mine.spec!.template.metadata?.labels, original.spec!.template.metadata?.labels);
  });

  it('reads the Secret files through the pod\'s fsGroup: group-readable only, mounted by the sidecar alone', () => {
    const credentials = spec.volumes?.find((v) => v.secret?.secretName === 'b2b-sidecar-credentials');
    assert.equal(credentials?.secret?.defaultMode, 0o440, 'readable by the fsGroup every container of the pod gets as a supplementary group');
    assert.ok(!spec.containers.some((c) => (c.volumeMounts ?? []).some((m) => m.name === credentials?.name)), 'the app never mounts the credentials');
  });

  it('takes no port the app uses (an app on 8080, Tomcat\'s and Spring\'s default) and the app\'s base URL is the sidecar\'s listen port', () => {
    assert.notEqual(appConfig.listen.port, 8080);
    const appPorts = [...spec.containers, ...(spec.initContainers ?? []).filter((c) => c.name !== SIDECAR)].flatMap((c) => (c.ports ?? []).map((p) => p.containerPort));
    assert.ok(appPorts.includes(8080));
    for (const port of [appConfig.listen.port, appConfig.admin.port]) assert.ok(!appPorts.includes(port), `the sidecar's ${port} is free in the pod`);
    const names = [...spec.containers, ...(spec.initContainers ?? [])].flatMap((c) => (c.ports ?? []).map((p) => p.name));
    assert.equal(new Set(names).size, names.length, 'port names are unique in the pod (the app has its own "metrics")');
    const url = spec.containers[0]!.env?.find((e) => e.name === 'B2B_SERVICE_URL')?.value;
    assert.equal(url, `http://127.0.0.1:${appConfig.listen.port}`);
    assert.equal(readFileSync(join(FIXTURE, 'sidecar.yaml'), 'utf8'), readFileSync(join(K8S, 'sidecar.yaml'), 'utf8'), 'the fixture\'s copy is the shipped sidecar.yaml');
  });

  it('resolves the sidecar\'s image from the overlay\'s images: entry', () => {
    const entry = readKustomization(FIXTURE).images?.find((i) => i.name === SIDECAR);
    assert.ok(entry, 'the overlay maps the image');
    assert.equal(added.image, `${entry.newName}:${entry.newTag}`);
  });

  it('stops with an error, instead of rendering nothing or everything, when the kustomization has no Deployment or two', () => {
    const app = readFileSync(join(FIXTURE, 'my-app.yaml'), 'utf8');
    const files = { 'sidecar.yaml': readFileSync(join(K8S, 'sidecar.yaml'), 'utf8'), 'my-app.yaml': app, 'worker.yaml': app.replaceAll('orders-service', 'orders-worker') };
    const base = { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', components: [COMPONENT], configMapGenerator: [{ name: 'b2b-sidecar-config', files: ['sidecar.yaml'] }] };
    const none = kustomize(overlay('no-deployment', { ...base, resources: [] }, files));
    assert.match(none.error ?? 'rendered', /nothing selected by Deployment\.v1\.apps/);
    const two = kustomize(overlay('two-deployments', { ...base, resources: ['my-app.yaml', 'worker.yaml'] }, files));
    assert.match(two.error ?? 'rendered', /multiple matches for selector Deployment\.v1\.apps/);
    const one = kustomize(overlay('one-deployment', { ...base, resources: ['worker.yaml'] }, files));
    assert.equal(one.error, undefined);
  });

  it('is shown in its README.md with the fixture\'s kustomization, and both kustomize errors are explained there', () => {
    const readme = readFileSync(join(COMPONENT, 'README.md'), 'utf8');
    const block = /```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(block, 'README.md has the yaml block');
    const shown = parse(block) as Record<string, unknown>;
    const fixture = readKustomization(FIXTURE) as unknown as Record<string, unknown>;
    assert.deepEqual({ ...shown, components: undefined }, { ...fixture, components: undefined });
    assert.match(String((shown.components as string[])[0]), /deploy\/kubernetes\/components\/add-to-deployment$/);
    assert.ok(readme.includes('nothing selected by Deployment.v1.apps') && readme.includes('multiple matches for selector Deployment.v1.apps'));
  });
});

describe('deploy/kubernetes: components combine on the one Deployment (components/README.md)', () => {
  const FIXTURE = join(repo, 'test/fixtures/k8s-existing-app');
  const appFiles = { 'my-app.yaml': readFileSync(join(FIXTURE, 'my-app.yaml'), 'utf8'), 'sidecar.yaml': readFileSync(join(K8S, 'sidecar.yaml'), 'utf8') };
  const appOriginal = readDocs(join(FIXTURE, 'my-app.yaml'))[0] as unknown as IDeployment;
  const withoutAnnotations = appFiles['my-app.yaml'].replace(/^ {8}prometheus\.io\/.*\n/gm, '').replace(/^ {8}# Its own metrics.*\n/m, '');

  /** The user's own kustomization (the fixture's) with `components:` in the order given. */
  function renderApp(components: string[], app = appFiles['my-app.yaml']): ReturnType<typeof kustomize> {
    const fixture = readKustomization(FIXTURE) as unknown as Record<string, unknown>;
    return kustomize(overlay(`app-with-${components.join('-')}${app === appFiles['my-app.yaml'] ? '' : '-bare'}`, {
      ...fixture, resources: ['my-app.yaml'], components: components.map((c) => join(K8S, 'components', c)),
    }, { ...appFiles, 'my-app.yaml': app }));
  }

  interface Case { on: 'example' | 'own'; components: string[]; native: boolean; scrape: 'annotations' | 'servicemonitor' | 'app'; bare?: boolean }
  const CASES: Case[] = [
    { on: 'example', components: ['scrape-annotations'], native: true, scrape: 'annotations' },
    { on: 'example', components: ['servicemonitor'], native: true, scrape: 'servicemonitor' },
    { on: 'example', components: ['scrape-annotations', 'pre-1.29'], native: false, scrape: 'annotations' },
    { on: 'example', components: ['servicemonitor', 'pre-1.29'], native: false, scrape: 'servicemonitor' },
    { on: 'own', components: ['add-to-deployment'], native: true, scrape: 'app' },
    { on: 'own', components: ['add-to-deployment', 'servicemonitor'], native: true, scrape: 'servicemonitor' },
    { on: 'own', components: ['add-to-deployment', 'scrape-annotations'], native: true, scrape: 'annotations', bare: true },
    { on: 'own', components: ['add-to-deployment', 'pre-1.29'], native: false, scrape: 'app' },
    { on: 'own', components: ['add-to-deployment', 'pre-1.29', 'servicemonitor'], native: false, scrape: 'servicemonitor' },
    { on: 'own', components: ['add-to-deployment', 'servicemonitor', 'pre-1.29'], native: false, scrape: 'servicemonitor' },
  ];

  it('documents every combination tested here in components/README.md', () => {
    const readme = readFileSync(join(K8S, 'components/README.md'), 'utf8');
    const rows = [...readme.matchAll(/^\| (`[^|]*`[^|]*) \| (init container|first container)/gm)].map((m) => [...m[1]!.matchAll(/`([a-z0-9.-]+)`/g)].map((x) => x[1]).filter((c) => c !== 'prometheus.io'));
    for (const c of CASES) {
      const listed = c.on === 'own' ? c.components : c.components;
      assert.ok(rows.some((r) => [...r].sort().join() === [...listed].sort().join()), `components/README.md has a row for ${listed.join(', ')}`);
    }
  });

  for (const c of CASES) {
    it(`${c.on === 'own' ? 'orders-service + ' : 'legacy-app + '}${c.components.join(' + ')}: sidecar ${c.native ? 'native' : 'a container'}, scraped by ${c.scrape}`, () => {
      const out = c.on === 'example' ? { manifests: renderK8s(c.components.map((x) => `components/${x}`)) } : renderApp(c.components, c.bare ? withoutAnnotations : undefined);
      assert.equal(out.error, undefined, out.error);
      const manifests = out.manifests!;
      validateAll(manifests);
      const name = c.on === 'own' ? 'orders-service' : 'legacy-app';
      assert.ok(!manifests.some((m) => m.metadata.name.startsWith(c.on === 'own' ? 'legacy-app' : 'orders-service')), 'nothing of the other app');
      const deploymentOut = only<IDeployment>(manifests, 'Deployment');
      assert.equal(deploymentOut.metadata?.name, name);
      const spec = deploymentOut.spec!.template.spec!;
      const inits = (spec.initContainers ?? []).filter((x) => x.name === SIDECAR);
      const regular = spec.containers.filter((x) => x.name === SIDECAR);
      if (c.native) {
        assert.equal(inits.length, 1, 'an init container');
        assert.equal(inits[0]!.restartPolicy, 'Always');
        assert.equal(regular.length, 0);
      } else {
        assert.equal(inits.length, 0, 'no init container left that would never exit');
        assert.equal(spec.containers[0]!.name, SIDECAR, 'the first container');
        assert.equal(spec.containers[0]!.restartPolicy, undefined);
        assert.ok(spec.containers[0]!.lifecycle?.postStart && spec.containers[0]!.lifecycle.preStop);
      }
      if (c.on === 'own') {
        const original = appOriginal.spec!.template.spec!;
        assert.deepEqual(spec.containers.filter((x) => x.name !== SIDECAR), original.containers, 'the app\'s containers unchanged');
        assert.deepEqual(spec.initContainers?.filter((x) => x.name !== SIDECAR), original.initContainers);
        assert.equal(spec.securityContext?.fsGroup, 2000);
      }
      const annotations = deploymentOut.spec!.template.metadata?.annotations ?? {};
      const prom = Object.fromEntries(Object.entries(annotations).filter(([k]) => k.startsWith('prometheus.io/')));
      if (c.scrape === 'annotations') {
        assert.deepEqual(prom, { 'prometheus.io/scrape': 'true', 'prometheus.io/port': String(config.admin.port), 'prometheus.io/path': '/metrics' });
      } else if (c.on === 'own') {
        assert.deepEqual(annotations, appOriginal.spec!.template.metadata?.annotations, 'the app\'s own annotations, prometheus.io/* included, as they were');
      } else {
        assert.deepEqual(prom, {}, 'scraped once, not twice');
      }
      const monitors = manifests.filter((m) => m.kind === 'ServiceMonitor') as unknown as IServiceMonitor[];
      const services = manifests.filter((m) => m.kind === 'Service') as unknown as IService[];
      if (c.scrape !== 'servicemonitor') {
        assert.equal(monitors.length + services.length, 0);
        return;
      }
      const monitor = monitors[0]!;
      assert.equal(monitors.length, 1);
      assert.equal(monitor.metadata?.name, `${name}-b2b-sidecar`);
      const selected = services.filter((s) => selects(monitor.spec.selector.matchLabels, s.metadata?.labels));
      assert.equal(selected.length, 1, 'the ServiceMonitor selects exactly one Service');
      const service = selected[0]!;
      assert.equal(service.metadata?.name, `${name}-b2b-sidecar`);
      assert.equal(monitor.spec.selector.matchLabels?.['app.kubernetes.io/name'], name, 'apps in one namespace do not scrape each other');
      assert.deepEqual(service.spec?.selector, deploymentOut.spec!.selector.matchLabels, 'the Service selects the Deployment\'s pods');
      assert.ok(selects(service.spec?.selector, deploymentOut.spec!.template.metadata?.labels));
      const endpoint = monitor.spec.endpoints?.[0];
      const port = service.spec?.ports?.find((p) => p.name === endpoint?.port);
      const sidecarContainer = [...inits, ...regular][0]!;
      assert.equal(port?.targetPort, config.admin.port);
      assert.ok(sidecarContainer.ports?.some((p) => p.containerPort === port?.targetPort), 'the target port is the sidecar\'s admin port');
      assert.equal(endpoint?.path, '/metrics');
    });
  }

  it('stops, instead of leaving an init container that never exits, when pre-1.29 comes before add-to-deployment', () => {
    const out = renderApp(['pre-1.29', 'add-to-deployment']);
    assert.match(out.error ?? 'rendered', /initContainers\/0\/name/);
  });

  it('stops when servicemonitor finds no Deployment or several', () => {
    const files = { ...appFiles, 'worker.yaml': appFiles['my-app.yaml'].replaceAll('orders-service', 'orders-worker') };
    const k = { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', components: [join(K8S, 'components/servicemonitor')] };
    assert.match(kustomize(overlay('sm-none', { ...k, resources: [] }, files)).error ?? 'rendered', /nothing selected by Deployment\.v1\.apps/);
    assert.match(kustomize(overlay('sm-two', { ...k, resources: ['my-app.yaml', 'worker.yaml'] }, files)).error ?? 'rendered', /multiple matches for selector Deployment\.v1\.apps/);
  });

  it('keeps the unix-socket option of add-to-deployment\'s patch identical to the example Deployment, comments included', () => {
    const example = readFileSync(join(K8S, 'deployment.yaml'), 'utf8');
    const patch = readFileSync(join(K8S, 'components/add-to-deployment/sidecar.patch.yaml'), 'utf8');
    const block = (text: string, end: string) => text.slice(text.indexOf(`        - name: ${SIDECAR}\n`), text.indexOf(end));
    const mine = block(patch, '      volumes:\n');
    assert.ok(mine.length > 1000 && mine.includes('B2B_LISTEN_SOCKET'));
    assert.equal(mine, block(example, '      containers:\n'));
    // The socket lies in a subdirectory of the emptyDir (mode 0777, no sticky bit, which the
    // sidecar refuses as the socket's directory), made by an init step.
    const socket = /value: (\S+sidecar\.sock)/.exec(mine)?.[1];
    const mount = /# - name: sidecar-socket\n\s+# {3}mountPath: (\S+)/.exec(mine)?.[1];
    assert.ok(socket && mount && dirname(socket) !== mount && dirname(socket).startsWith(`${mount}/`), `${socket} in a subdirectory of ${mount}`);
    assert.ok(mine.includes(`mkdirSync('${dirname(socket)}'`), 'the init step makes that subdirectory');
    const volume = (text: string) => text.slice(text.indexOf('        # The unix-socket option: a directory both containers share'));
    assert.equal(volume(patch), volume(example).trimEnd() + '\n');
  });
});
