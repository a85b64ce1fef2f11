import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import { Role, type IRole } from 'kubernetes-models/rbac.authorization.k8s.io/v1/Role';
import { RoleBinding, type IRoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Secret, type ISecret } from 'kubernetes-models/v1/Secret';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { fleetRecordKey } from '../../src/fleet/fleet-record.js';
import { openKubernetesStore } from '../../src/fleet/kubernetes-store.js';
import { SERVICE_ACCOUNT_DIR } from '../../src/fleet/service-account-token.js';
import { envNameOf } from '../../src/shared/env-names.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { kustomize, type Manifest } from '../helpers/kustomize.js';
import { startKubernetesApi } from '../helpers/kubernetes-api.js';
import { testTls } from '../helpers/tls.js';

/**
 * deploy/kubernetes/components/fleet-kubernetes, rendered by the real kustomize (`kubectl
 * kustomize`, test/helpers/kustomize.ts): the Secret, the Role on it alone, the RoleBinding to the
 * pod's own ServiceAccount, and the sidecar's token, CA, namespace and settings; and the Role
 * checked against what the store really asks of the API server (the test API server enforces it).
 */
const repo = fileURLToPath(new URL('../../', import.meta.url));
const K8S = join(repo, 'deploy/kubernetes');
const COMPONENT = join(K8S, 'components/fleet-kubernetes');
const FIXTURE = join(repo, 'test/fixtures/k8s-existing-app');
const SIDECAR = 'b2b-sidecar';

const tmp = mkdtempSync(join(tmpdir(), 'b2b-deploy-fleet-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

/** A kustomization in `tmp` over `files`, listing `components` (absolute paths made relative). */
function renderWith(name: string, resources: Record<string, string>, components: string[]): ReturnType<typeof kustomize> {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  for (const [file, text] of Object.entries({ ...resources, 'sidecar.yaml': readFileSync(join(K8S, 'sidecar.yaml'), 'utf8') })) writeFileSync(join(dir, file), text);
  writeFileSync(join(dir, 'kustomization.yaml'), stringify({
    apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources: Object.keys(resources),
    components: components.map((c) => relative(dir, c)), configMapGenerator: [{ name: 'b2b-sidecar-config', files: ['sidecar.yaml'] }],
  }));
  return kustomize(dir);
}

function one<T>(manifests: Manifest[], kind: string): T {
  const found = manifests.filter((m) => m.kind === kind);
  assert.equal(found.length, 1, `exactly one ${kind}`);
  return found[0] as unknown as T;
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  Deployment, Role, RoleBinding, ConfigMap, Secret,
};

const ownApp = readFileSync(join(FIXTURE, 'my-app.yaml'), 'utf8');
const rendered = renderWith('own', { 'my-app.yaml': ownApp }, [join(K8S, 'components/add-to-deployment'), COMPONENT]);
assert.equal(rendered.error, undefined, rendered.error);
const manifests = rendered.manifests!;
const deployment = one<IDeployment>(manifests, 'Deployment');
const podSpec = deployment.spec!.template.spec!;
const sidecar = podSpec.initContainers!.find((c) => c.name === SIDECAR)!;
const secret = one<ISecret>(manifests, 'Secret');
const role = one<IRole>(manifests, 'Role');
const binding = one<IRoleBinding>(manifests, 'RoleBinding');

function env(container: IContainer, name: string): string | undefined {
  return container.env?.find((e) => e.name === name)?.value;
}

describe('deploy/kubernetes/components/fleet-kubernetes', () => {
  it('renders with add-to-deployment on an app of its own, every object valid against its schema', () => {
    for (const m of manifests) {
      const Model = MODELS[m.kind];
      assert.ok(Model, `no schema for ${m.kind}`);
      assert.doesNotThrow(() => new Model(m as never).validate(), `${m.kind} ${m.metadata.name}`);
    }
  });

  it('uses only fields the Kubernetes API types know (TypeScript excess-property check)', () => {
    // validate() accepts unknown keys (a misspelt `expirationSecond` would pass it); an object
    // literal checked with `satisfies` against the API interface does not.
    const TYPES: Record<string, [string, string]> = {
      Deployment: ['kubernetes-models/apps/v1/Deployment', 'IDeployment'], Role: ['kubernetes-models/rbac.authorization.k8s.io/v1/Role', 'IRole'],
      RoleBinding: ['kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding', 'IRoleBinding'], ConfigMap: ['kubernetes-models/v1/ConfigMap', 'IConfigMap'],
      Secret: ['kubernetes-models/v1/Secret', 'ISecret'],
    };
    const source = [...Object.values(TYPES).map(([module, type]) => `import type { ${type} } from '${module}';`),
      ...manifests.map((m, i) => `// ${m.kind} ${m.metadata.name}\nexport const m${i} = ${JSON.stringify(m, null, 1)} satisfies ${TYPES[m.kind]![1]};`), ''].join('\n');
    mkdirSync(join(repo, '.tmp'), { recursive: true });
    const dir = mkdtempSync(join(repo, '.tmp', 'deploy-fleet-types-'));
    try {
      writeFileSync(join(dir, 'manifests.ts'), source);
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types: [] },
        files: ['manifests.ts'],
      }));
      const tsc = spawnSync(join(repo, 'node_modules/.bin/tsc'), ['-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
      assert.equal(tsc.status, 0, `${tsc.stdout}${tsc.stderr}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pre-creates an empty Secret named after the Deployment', () => {
    assert.equal(secret.metadata?.name, 'orders-service-b2b-sidecar-fleet');
    assert.equal(secret.type, 'Opaque');
    assert.equal(secret.data, undefined, 'no data: re-applying never touches the records the sidecars wrote');
    assert.equal(secret.stringData, undefined);
  });

  it('grants get, list, watch and update on that one Secret by name, and nothing else', () => {
    assert.equal(role.rules?.length, 1);
    const rule = role.rules![0]!;
    assert.deepEqual(rule.apiGroups, ['']);
    assert.deepEqual(rule.resources, ['secrets']);
    assert.deepEqual(rule.resourceNames, [secret.metadata?.name]);
    assert.deepEqual([...rule.verbs].sort(), ['get', 'list', 'update', 'watch']);
  });

  it('binds the Role to the pod\'s own ServiceAccount, in the binding\'s namespace', () => {
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata?.name });
    assert.deepEqual(binding.subjects, [{ kind: 'ServiceAccount', name: podSpec.serviceAccountName }]);
    assert.equal(podSpec.serviceAccountName, 'orders-service');
  });

  it('gives the sidecar, and only the sidecar, the token, CA and namespace where the store reads them by default', () => {
    const mount = sidecar.volumeMounts?.find((m) => m.mountPath === SERVICE_ACCOUNT_DIR);
    assert.ok(mount, `the sidecar mounts ${SERVICE_ACCOUNT_DIR}`);
    assert.equal(mount.readOnly, true);
    const volume = podSpec.volumes?.find((v) => v.name === mount.name);
    const sources = volume?.projected?.sources ?? [];
    assert.equal(sources.find((s) => s.serviceAccountToken)?.serviceAccountToken?.path, 'token');
    assert.deepEqual(sources.find((s) => s.configMap)?.configMap, { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] });
    assert.equal(sources.find((s) => s.downwardAPI)?.downwardAPI?.items?.[0]?.path, 'namespace');
    assert.equal(sources.find((s) => s.downwardAPI)?.downwardAPI?.items?.[0]?.fieldRef?.fieldPath, 'metadata.namespace');
    for (const c of [...podSpec.containers, ...podSpec.initContainers!.filter((x) => x.name !== SIDECAR)]) {
      assert.ok(!(c.volumeMounts ?? []).some((m) => m.name === mount.name), `${c.name} never sees the token that reads the fleet's Secret`);
    }
  });

  it('sets fleet.store and fleet.kubernetesSecret through the environment variables of the naming rule', () => {
    assert.equal(envNameOf(['fleet', 'store']), 'B2B_FLEET_STORE');
    assert.equal(envNameOf(['fleet', 'kubernetesSecret']), 'B2B_FLEET_KUBERNETES_SECRET');
    assert.equal(env(sidecar, 'B2B_FLEET_STORE'), 'kubernetes');
    assert.equal(env(sidecar, 'B2B_FLEET_KUBERNETES_SECRET'), secret.metadata?.name);
  });

  it('leaves the app\'s containers, init containers and ServiceAccount as they were', () => {
    const original = (kustomize(FIXTURE).manifests ?? []).find((m) => m.kind === 'Deployment') as unknown as IDeployment;
    assert.deepEqual(podSpec.containers, original.spec!.template.spec!.containers);
    assert.deepEqual(podSpec.initContainers!.filter((c) => c.name !== SIDECAR), original.spec!.template.spec!.initContainers!.filter((c) => c.name !== SIDECAR));
    assert.equal(podSpec.automountServiceAccountToken, original.spec!.template.spec!.automountServiceAccountToken);
  });

  it('works on the example Deployment with pre-1.29 after it: the sidecar a container, with its settings and token, and no token for the app', () => {
    const example = readFileSync(join(K8S, 'deployment.yaml'), 'utf8').replace(/^ {4}spec:\n/m, '    spec:\n      serviceAccountName: legacy-app\n');
    const out = renderWith('example-pre-1.29', { 'deployment.yaml': example }, [COMPONENT, join(K8S, 'components/pre-1.29')]);
    assert.equal(out.error, undefined, out.error);
    const spec = one<IDeployment>(out.manifests!, 'Deployment').spec!.template.spec!;
    assert.equal(spec.containers[0]!.name, SIDECAR);
    assert.equal(env(spec.containers[0]!, 'B2B_FLEET_KUBERNETES_SECRET'), 'legacy-app-b2b-sidecar-fleet');
    assert.ok(spec.containers[0]!.volumeMounts?.some((m) => m.mountPath === SERVICE_ACCOUNT_DIR));
    assert.equal(spec.automountServiceAccountToken, false, 'the app still gets no token');
    new Deployment(one<IDeployment>(out.manifests!, 'Deployment') as never).validate();
  });

  it('stops instead of binding the namespace\'s "default" ServiceAccount, and when listed after pre-1.29', () => {
    const example = readFileSync(join(K8S, 'deployment.yaml'), 'utf8');
    const noAccount = renderWith('no-service-account', { 'deployment.yaml': example }, [COMPONENT]);
    assert.match(noAccount.error ?? 'rendered', /spec\.template\.spec\.serviceAccountName` is missing for replacement source/);
    const withAccount = example.replace(/^ {4}spec:\n/m, '    spec:\n      serviceAccountName: legacy-app\n');
    const late = renderWith('after-pre-1.29', { 'deployment.yaml': withAccount }, [join(K8S, 'components/pre-1.29'), COMPONENT]);
    assert.match(late.error ?? 'rendered', /\/spec\/template\/spec\/initContainers\/0\/name/);
  });

  it('grants what the store asks of the API server: every operation and the watch pass RBAC with exactly the rendered Role', async () => {
    const api = await startKubernetesApi({ secretName: secret.metadata!.name! });
    const file = join(tmp, 'token');
    writeFileSync(file, api.addToken(role.rules![0]!.verbs));
    const store = await openKubernetesStore({
      secretName: env(sidecar, 'B2B_FLEET_KUBERNETES_SECRET')!, namespace: api.namespace, apiServer: api.url, tokenFile: file,
      caFile: (await testTls()).caFile, logger: createCaptureLogger().logger,
    });
    try {
      const key = fleetRecordKey('https://vendor.test/', 'rbac');
      let changes = 0;
      store.watch!(key, () => changes++);
      assert.equal(await store.claim(key, 'pod-a', 30_000), true);
      assert.deepEqual(await store.publish(key, { token: 't', lifetimeSeconds: 900, mintedAtWall: 1_790_000_000_000, mintedBy: 'pod-a' }, 0), { ok: true, version: 1 });
      assert.equal(await store.invalidate(key, 1), true);
      await store.release(key, 'pod-a');
      assert.equal((await store.read(key))?.invalid, true);
      await Promise.race([api.watching(1), new Promise((_, reject) => setTimeout(() => reject(new Error('no watch within 5 s')), 5000).unref())]);
      assert.deepEqual(api.requests.filter((r) => r.status === 403 || r.status === 401), [], 'nothing refused');
      assert.deepEqual([...new Set(api.requests.map((r) => r.verb))].sort(), [...role.rules![0]!.verbs].sort(), 'every verb granted is used');
    } finally {
      await store.close();
      await api.close();
    }
  });
});
