import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { fleetRecordKey, serializeRecord, type MintedRecord } from '../../src/fleet/fleet-record.js';
import { FleetStoreError, type FleetStore } from '../../src/fleet/fleet-store.js';
import { openKubernetesStore, type KubernetesStoreOptions } from '../../src/fleet/kubernetes-store.js';
import { ServiceAccountToken } from '../../src/fleet/service-account-token.js';
import { createCaptureLogger } from '../helpers/capture-logger.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { startKubernetesApi, type KubernetesApiServer } from '../helpers/kubernetes-api.js';
import { generateTlsMaterial } from '../../src/simulator/certs.js';
import { testTls } from '../helpers/tls.js';
import { describeStoreContract } from './store-contract.js';

/**
 * The Kubernetes fleet store against the test API server (test/helpers/kubernetes-api.ts: the
 * real API server's GET, LIST, PUT and WATCH of a Secret, its 409, 410, 401 and 403, drawn from the
 * sources in test/fixtures/kubernetes/README.md), over HTTPS with the test CA as the cluster CA.
 */
const dir = mkdtempSync(join(tmpdir(), 'b2b-k8s-store-'));
after(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** Replaces a file as kubelet's atomic writer does: a new file renamed over the old one (a new inode). */
function replaceFile(file: string, content: string): void {
  writeFileSync(`${file}.new`, content);
  renameSync(`${file}.new`, file);
}

/** A token file holding `token`, as kubelet projects it. */
function tokenFile(token: string): string {
  const file = join(dir, `token-${++files}`);
  writeFileSync(file, `${token}\n`);
  return file;
}

async function open(api: KubernetesApiServer, extra: Partial<KubernetesStoreOptions> = {}): Promise<FleetStore> {
  return openKubernetesStore({
    secretName: api.secretName, namespace: api.namespace, apiServer: api.url, tokenFile: tokenFile(api.token),
    caFile: (await testTls()).caFile, logger: createCaptureLogger().logger, operationTimeoutMs: 5000,
    watchBackoffMs: { min: 20, max: 200 }, ...extra,
  });
}

const minted = (token: string): MintedRecord => ({ token, lifetimeSeconds: 900, mintedAtWall: 1_790_000_000_000, mintedBy: 'pod-b' });
const b64 = (text: string) => Buffer.from(text).toString('base64');
let keys = 0;
const newKey = () => fleetRecordKey('https://vendor.test/', `k8s-key-${++keys}`);

/** Polls `check` (an event from a socket, not token timing) until it holds, or fails naming `what`. */
async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** `promise`, or a failure naming `what` after `ms`. */
async function within<T>(promise: Promise<T>, what: string, ms = 5000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A test API server and a store on it opened with `extra`, both closed after `run`, whatever it does. */
async function withStore(extra: Partial<KubernetesStoreOptions>, run: (api: KubernetesApiServer, store: FleetStore) => Promise<void>): Promise<void> {
  const api = await startKubernetesApi();
  try {
    const store = await open(api, extra);
    try {
      await run(api, store);
    } finally {
      await store.close();
    }
  } finally {
    await api.close();
  }
}

async function rejectsWith(promise: Promise<unknown>, operation: string, pattern: RegExp): Promise<FleetStoreError> {
  const err = await promise.then(() => assert.fail('resolved'), (e: unknown) => e);
  assert.ok(err instanceof FleetStoreError, `a FleetStoreError, not ${String(err)}`);
  assert.equal(err.operation, operation);
  assert.match(err.message, pattern);
  return err;
}

describeStoreContract('kubernetes', async () => {
  const api = await startKubernetesApi();
  return { a: await open(api), b: await open(api), close: () => api.close() };
});

describe('kubernetes store: optimistic concurrency on one Secret', () => {
  it('retries a 409 caused by a peer\'s write to another data key of the Secret instead of reporting a lost race (docs/traps.md T89)', async () => {
    await withStore({}, async (api, store) => {
      const k = newKey();
      api.beforeNextPut(() => api.write('b2b-sidecar.someone-else.claim', b64('{"holder":"peer","untilWall":1}')));
      assert.deepEqual(await store.publish(k, minted('tok-1'), 0), { ok: true, version: 1 });
      const puts = api.requests.filter((r) => r.verb === 'update').map((r) => r.status);
      assert.deepEqual(puts, [409, 200], 'the first PUT lost on the Secret\'s version, the second won on a fresh read');
      assert.equal((await store.read(k))?.token, 'tok-1');
      assert.ok(api.secret()?.data?.['b2b-sidecar.someone-else.claim'], 'the peer\'s key is kept, not overwritten');
      // The same for a claim.
      api.beforeNextPut(() => api.write('b2b-sidecar.someone-else', b64('{}')));
      assert.equal(await store.claim(k, 'me', 30_000), true);
    });
  });

  it('reports a lost race when the 409 came from a peer\'s publish of the same record', async () => {
    await withStore({}, async (api, store) => {
      const k = newKey();
      api.beforeNextPut(() => api.write(k, b64(serializeRecord({ ...minted('tok-peer'), version: 1 }))));
      const result = await store.publish(k, minted('tok-mine'), 0);
      assert.equal(result.ok, false);
      assert.equal(result.ok === false && result.current?.token, 'tok-peer');
      assert.equal((await store.read(k))?.token, 'tok-peer');
    });
  });

  it('sends a request again, once, when the kept-alive connection it went out on is closed before any answer', async () => {
    await withStore({}, async (api, store) => {
      const k = newKey();
      await store.publish(k, minted('tok-1'), 0);
      api.dropNextRequest();
      assert.equal((await store.read(k))?.token, 'tok-1');
      assert.deepEqual(api.requests.slice(-2).map((r) => r.status), [0, 200], 'the first went unanswered, the second on a new connection');
    });
  });

  it('waits the Retry-After an overloaded API server answers with 429, on the injected clock, and sends again', async () => {
    const clock = new FakeClock();
    await withStore({ clock, operationTimeoutMs: 10_000 }, async (api, store) => { // two waits of 3 s fit
      const k = newKey();
      await store.publish(k, minted('tok-1'), 0);
      api.throttleNext(2, '3');
      const seen = api.requests.length;
      const reading = store.read(k);
      for (const n of [1, 2]) {
        // The wait is on the clock once the 429 is read: the next timer due is the 3 s it asked.
        await until(() => api.requests.length === seen + n && clock.nextDelay() === 3_000, `the wait after 429 number ${n}`);
        clock.advance(2_999);
        await new Promise((resolve) => setTimeout(resolve, 30));
        assert.equal(api.requests.length, seen + n, 'not sent again before the 3 s it asked');
        clock.advance(1);
      }
      assert.equal((await within(reading, 'the read'))?.token, 'tok-1');
      assert.deepEqual(api.requests.slice(seen).map((r) => r.status), [429, 429, 200]);
    });
  });

  it('names the 429 at once when the API server asks to wait past the operation deadline, or gives no Retry-After', async () => {
    const clock = new FakeClock();
    await withStore({ clock, operationTimeoutMs: 5000 }, async (api, store) => {
      const k = newKey();
      api.throttleNext(1, '60');
      const seen = api.requests.length;
      await rejectsWith(within(store.read(k), 'the read'), 'read', /get answered 429 Too Many Requests and asked to wait 60 s, past the operation's deadline: .*priority and fairness/);
      assert.equal(api.requests.length, seen + 1, 'not sent again');
      api.throttleNext(1, 'soon');
      await rejectsWith(within(store.claim(k, 'me', 30_000), 'the claim'), 'claim', /get answered 429 Too Many Requests with no Retry-After in whole seconds/);
    });
  });

  it('reads the cluster CA file again when the API server\'s certificate no longer verifies, and goes on with the new CA (a CA rotation)', async () => {
    const caFile = join(dir, `ca-${++files}.pem`);
    writeFileSync(caFile, (await testTls()).caPem);
    const captured = createCaptureLogger();
    await withStore({ caFile, logger: captured.logger }, async (api, store) => {
      const k = newKey();
      await store.publish(k, minted('tok-1'), 0);
      // The rotation: kubelet updates the projected ca.crt, the API server serves a certificate of the new CA.
      const rotated = await generateTlsMaterial(['localhost', '127.0.0.1']);
      replaceFile(caFile, rotated.caPem);
      api.useCertificate(rotated);
      // Two requests meet the new certificate at once: both go on with the new CA.
      assert.deepEqual((await Promise.all([store.read(k), store.read(k)])).map((r) => r?.token), ['tok-1', 'tok-1']);
      assert.match(captured.text(), /the API server's certificate did not verify, and the cluster CA .* changed: connecting with the new one/);
      // A certificate no CA in the file signed is still refused: the file read again holds the same CA.
      api.useCertificate(await generateTlsMaterial(['localhost', '127.0.0.1']));
      await rejectsWith(store.read(k), 'read', /could not be reached \(read on Secret .*\): (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/);
    });
  });

  it('stops trusting the old CA once the file drops it: the file is looked at every minute, not only on a failure', async () => {
    const clock = new FakeClock();
    const caFile = join(dir, `ca-${++files}.pem`);
    const old = await testTls();
    writeFileSync(caFile, old.caPem);
    const captured = createCaptureLogger();
    await withStore({ caFile, clock, logger: captured.logger }, async (api, store) => {
      const k = newKey();
      await store.publish(k, minted('tok-1'), 0);
      // A rotation in steps: the file holds both CAs, the server moves to the new one, the file drops the old one.
      const next = await generateTlsMaterial(['localhost', '127.0.0.1']);
      replaceFile(caFile, `${old.caPem}\n${next.caPem}\n`);
      api.useCertificate(next);
      assert.equal((await store.read(k))?.token, 'tok-1');
      replaceFile(caFile, next.caPem);
      clock.advance(60_000);
      assert.equal((await store.read(k))?.token, 'tok-1');
      assert.match(captured.text(), /the cluster CA .* changed: connecting with it/);
      // A server presenting a certificate of the dropped CA (it was rotated out, perhaps because it leaked) is refused.
      api.useCertificate(old);
      await rejectsWith(store.read(k), 'read', /could not be reached .*: (UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/);
    });
  });

  it('keeps the record as base64 JSON in data key <key> and the claim in <key>.claim', async () => {
    await withStore({}, async (api, store) => {
      const k = newKey();
      await store.publish(k, minted('tok-1'), 0);
      await store.claim(k, 'pod-a', 30_000);
      const data = api.secret()?.data ?? {};
      assert.equal(JSON.parse(Buffer.from(data[k]!, 'base64').toString()).token, 'tok-1');
      assert.equal(JSON.parse(Buffer.from(data[`${k}.claim`]!, 'base64').toString()).holder, 'pod-a');
      await store.release(k, 'pod-a');
      assert.equal(api.secret()?.data?.[`${k}.claim`], undefined, 'a release removes the claim key');
    });
  });
});

describe('kubernetes store: the projected service-account token', () => {
  it('reads the token file again when the API server refuses the old token, and succeeds (docs/traps.md T91)', async () => {
    const api = await startKubernetesApi();
    const file = tokenFile(api.token);
    const store = await open(api, { tokenFile: file });
    try {
      const k = newKey();
      await store.publish(k, minted('tok-1'), 0);
      // kubelet rotated the projected token: the API server knows only the new one, the file holds it.
      const old = api.token;
      writeFileSync(file, `${api.rotateToken()}\n`);
      assert.equal((await store.read(k))?.token, 'tok-1');
      assert.deepEqual(api.requests.slice(-2).map((r) => r.status), [401, 200]);
      assert.notEqual(api.token, old);
    } finally {
      await store.close();
      await api.close();
    }
  });

  it('names the token file, never the token, when even the re-read token is refused', async () => {
    const api = await startKubernetesApi();
    const file = tokenFile(api.token);
    const logged = createCaptureLogger();
    const store = await open(api, { tokenFile: file, logger: logged.logger });
    try {
      const stale = api.token;
      api.rotateToken();
      const err = await rejectsWith(store.read(newKey()), 'read', /refused the service-account token of .*token-\d+ \(401\)/);
      assert.ok(!err.message.includes(stale) && !err.message.includes(api.token));
      assert.ok(!logged.text().includes(stale));
    } finally {
      await store.close();
      await api.close();
    }
  });

  it('names the token file and the pod setting when there is no token file', async () => {
    await withStore({ tokenFile: join(dir, 'no-such-token') }, async (api, store) => {
      await rejectsWith(store.read(newKey()), 'read', /read on Secret apps\/b2b-sidecar-fleet: the service-account token file .*no-such-token does not exist: is automountServiceAccountToken on/);
    });
  });

  it('reads the token file again after the reload interval, without waiting for a 401', async () => {
    const clock = new FakeClock();
    const file = tokenFile('first');
    const token = new ServiceAccountToken(file, clock, 60_000);
    assert.equal(await token.get(), 'first');
    writeFileSync(file, 'second\n');
    clock.advance(59_000);
    assert.equal(await token.get(), 'first', 'a copy younger than the interval is used');
    clock.advance(1_000);
    assert.equal(await token.get(), 'second');
  });
});

describe('kubernetes store: the watch', () => {
  it('calls onChange when a peer publishes, and not for a peer\'s claim', async () => {
    const api = await startKubernetesApi();
    const a = await open(api);
    const b = await open(api);
    try {
      const k = newKey();
      let changes = 0;
      const stop = a.watch!(k, () => changes++);
      await within(api.watching(1), 'the watch');
      await until(() => changes === 1, 'the first sight of the record');
      assert.equal(await b.claim(k, 'b', 30_000), true);
      await b.publish(k, minted('tok-peer'), 0);
      await until(() => changes >= 2, 'onChange after the peer\'s publish');
      assert.equal(changes, 2, 'the claim before it changed no record');
      assert.equal((await a.read(k))?.token, 'tok-peer');
      stop();
      await until(() => api.openWatches() === 0, 'the watch to end once nobody listens');
    } finally {
      await a.close();
      await b.close();
      await api.close();
    }
  });

  it('watches again after the connection drops, logging it once without the token', async () => {
    const api = await startKubernetesApi();
    const logged = createCaptureLogger();
    const a = await open(api, { logger: logged.logger });
    const b = await open(api);
    try {
      const k = newKey();
      let changes = 0;
      a.watch!(k, () => changes++);
      await within(api.watching(1), 'the watch');
      await until(() => changes === 1, 'the first sight of the record');
      const watches = api.requests.filter((r) => r.verb === 'watch').length;
      api.dropConnections();
      await until(() => api.requests.filter((r) => r.verb === 'watch').length > watches && api.openWatches() === 1, 'a new watch');
      await b.publish(k, minted('tok-after-reset'), 0);
      await until(() => changes >= 2, 'onChange on the new watch');
      const warnings = logged.lines().filter((l) => l.level === 'warn');
      assert.equal(warnings.length, 1, logged.text());
      assert.match(String(warnings[0]!.message), /the watch of Secret apps\/b2b-sidecar-fleet failed .*; again in \d+ ms/);
      assert.ok(!logged.text().includes(api.token));
      assert.equal(logged.lines().filter((l) => /works again/.test(String(l.message))).length, 1);
    } finally {
      await a.close();
      await b.close();
      await api.close();
    }
  });

  it('resumes from a bookmark\'s resourceVersion: no 410 and no list after a compaction the bookmark covered', async () => {
    const api = await startKubernetesApi();
    const a = await open(api);
    try {
      let changes = 0;
      a.watch!(newKey(), () => changes++);
      await within(api.watching(1), 'the watch');
      await until(() => changes === 1, 'the first sight of the record');
      api.advanceOthers(7);
      // The bookmark and the end of the stream (compact ends it) go out in that order on one
      // connection: the store reads the bookmark before it sees the watch end.
      const mark = api.requests.length;
      api.bookmark();
      api.compact();
      await within(api.watching(1), 'the watch again');
      assert.deepEqual(api.requests.slice(mark).map((r) => `${r.verb}:${r.query.get('resourceVersion') ?? ''}:${r.status}`), ['watch:108:200']);
    } finally {
      await a.close();
      await api.close();
    }
  });

  const CASES = [
    { name: 'an ERROR event with code 410 on the open watch', as: 'event', notify: true, expect: ['list::200', 'watch:108:200'] },
    { name: 'an ERROR event with code 410 when resuming', as: 'event', notify: false, expect: ['watch:101:200', 'list::200', 'watch:108:200'] },
    { name: 'an HTTP 410 when resuming', as: 'status', notify: false, expect: ['watch:101:410', 'list::200', 'watch:108:200'] },
  ] as const;
  for (const c of CASES) {
    it(`lists again after 410 Gone (${c.name}) and watches from the new list's resourceVersion, not a stale one (docs/traps.md T90)`, async () => {
      const api = await startKubernetesApi();
      const a = await open(api);
      const b = await open(api);
      try {
        const k = newKey();
        let changes = 0;
        a.watch!(k, () => changes++);
        await within(api.watching(1), 'the watch');
        await until(() => changes === 1, 'the first sight of the record');
        assert.equal(api.secret()?.metadata.resourceVersion, '101');
        // Other objects move the cluster's resourceVersion (to 108) past this Secret's (101); then
        // etcd compacts and the open watch ends: the Secret's own version, the one the watch last
        // saw, is now too old to watch from.
        const mark = api.requests.length;
        api.advanceOthers(7);
        api.compact({ as: c.as, notify: c.notify });
        await within(api.watching(1), 'a watch that the API server keeps open again');
        const calls = api.requests.slice(mark).map((r) => `${r.verb}:${r.query.get('resourceVersion') ?? ''}:${r.status}`);
        assert.deepEqual(calls, c.expect, 'resumes once, is told 410, lists, and watches from the list\'s resourceVersion');
        await b.publish(k, minted('tok-after-compaction'), 0);
        await until(() => changes >= 2, 'onChange after the relist');
        assert.equal((await a.read(k))?.token, 'tok-after-compaction');
      } finally {
        await a.close();
        await b.close();
        await api.close();
      }
    });
  }
});

describe('kubernetes store: what an operator is told', () => {
  it('names the missing Secret, how to create it and the RBAC it needs', async () => {
    const api = await startKubernetesApi({ createSecret: false });
    const store = await open(api);
    try {
      const err = await rejectsWith(store.read(newKey()), 'read', /Secret apps\/b2b-sidecar-fleet not found: create it/);
      assert.match(err.message, /get, list, watch and update/);
      assert.match(err.message, /components\/fleet-kubernetes/);
      await rejectsWith(store.claim(newKey(), 'a', 1000), 'claim', /not found/);
    } finally {
      await store.close();
      await api.close();
    }
  });

  it('names the verb the ServiceAccount lacks (403) without the token', async () => {
    const api = await startKubernetesApi();
    const readOnly = api.addToken(['get']);
    const store = await open(api, { tokenFile: tokenFile(readOnly) });
    try {
      assert.equal(await store.read(newKey()), undefined, 'get is allowed');
      const err = await rejectsWith(store.claim(newKey(), 'a', 1000), 'claim', /Secret apps\/b2b-sidecar-fleet: update forbidden \(403: secrets "b2b-sidecar-fleet" is forbidden: User "system:serviceaccount:apps:orders-service" cannot update/);
      assert.match(err.message, /Role and RoleBinding/);
      assert.ok(!err.message.includes(readOnly));
    } finally {
      await store.close();
      await api.close();
    }
  });

  it('rejects within the deadline when the API server is down: refused, and accepting but never answering', async () => {
    const api = await startKubernetesApi();
    // Refused: a port nobody listens on any more.
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const closedPort = (gone.address() as AddressInfo).port;
    await new Promise<void>((resolve) => gone.close(() => resolve()));
    const refused = await open(api, { apiServer: `https://127.0.0.1:${closedPort}` });
    await rejectsWith(refused.read(newKey()), 'read', new RegExp(`API server https://127\\.0\\.0\\.1:${closedPort} could not be reached \\(read on Secret apps/b2b-sidecar-fleet\\): ECONNREFUSED`));
    await refused.close();
    // A black hole: the connection opens, nothing ever answers.
    const sockets: Socket[] = [];
    const hole = createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => hole.listen(0, '127.0.0.1', resolve));
    const port = (hole.address() as AddressInfo).port;
    const silent = await open(api, { apiServer: `https://127.0.0.1:${port}`, operationTimeoutMs: 200 });
    try {
      await rejectsWith(silent.read(newKey()), 'read', /did not answer \(read on Secret apps\/b2b-sidecar-fleet\) within 200 ms/);
      await rejectsWith(silent.publish(newKey(), minted('t'), 0), 'publish', /did not answer/);
    } finally {
      await silent.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => hole.close(() => resolve()));
      await api.close();
    }
  });

  it('gives up a watch request that gets no answer within the operation deadline, and watches again', async () => {
    const logged = createCaptureLogger();
    await withStore({ operationTimeoutMs: 300, logger: logged.logger }, async (api, store) => {
      api.hangWatches(true);
      store.watch!(newKey(), () => undefined);
      await until(() => logged.lines().some((l) => l.level === 'warn' && /the watch of Secret apps\/b2b-sidecar-fleet failed \(the request was aborted\)/.test(String(l.message))), 'the watch\'s failure');
      api.hangWatches(false);
      await within(api.watching(1), 'a watch answered');
    });
  });

  it('finds the API server from KUBERNETES_SERVICE_HOST/PORT and the namespace from the service-account file; refuses to open without them', async () => {
    const api = await startKubernetesApi();
    const namespaceFile = join(dir, 'namespace');
    writeFileSync(namespaceFile, 'apps');
    const port = new URL(api.url).port;
    const store = await open(api, { apiServer: undefined, namespace: undefined, namespaceFile, env: { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port } });
    try {
      assert.equal(await store.read(newKey()), undefined);
    } finally {
      await store.close();
      await api.close();
    }
    await assert.rejects(open(api, { apiServer: undefined, env: {} }), /KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset/);
    await assert.rejects(open(api, { namespace: undefined, namespaceFile: join(dir, 'absent') }), /set fleet\.kubernetesNamespace/);
  });
});
