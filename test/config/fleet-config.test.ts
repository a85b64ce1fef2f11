import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfig, redactConfig } from '../../src/config/validate-config.js';
import { envNameOf } from '../../src/shared/env-names.js';
import { fleetOptions } from '../../src/service/fleet-store-open.js';
import { problemsOf } from '../helpers/attach-problems.js';
import type { FleetStore } from '../../src/fleet/fleet-store.js';

type Raw = Record<string, any>;
const base = (fleet?: Raw): Raw => ({ service: { baseUrl: 'https://api.example.com' }, credentials: { apiKey: 'key-1234', password: 'pass-5678' }, ...(fleet ? { fleet } : {}) });

describe('config: the fleet section', () => {
  it('defaults to no store, local on a store outage, and timings that need no tuning', () => {
    const config = validateConfig(base());
    assert.deepEqual(config.fleet, { store: 'none', kubernetesServiceAccountDir: '/var/run/secrets/kubernetes.io/serviceaccount', onStoreDown: 'local', pollIntervalSeconds: 5, claimMarginSeconds: 5, clockSkewSeconds: 1 });
  });

  it('names the key each store needs, by key', () => {
    assert.deepEqual(problemsOf(base({ store: 'sqlite' })), ['fleet.sqlitePath (B2B_FLEET_SQLITE_PATH): is required with fleet.store sqlite (the database file the processes share)']);
    assert.deepEqual(problemsOf(base({ store: 'redis' })), ['fleet.redisUrl (B2B_FLEET_REDIS_URL): is required with fleet.store redis (redis://host:port, rediss://host:port or unix:///path)']);
    assert.deepEqual(problemsOf(base({ store: 'kubernetes' })), ['fleet.kubernetesSecret (B2B_FLEET_KUBERNETES_SECRET): is required with fleet.store kubernetes (the name of the pre-created Secret)']);
    assert.deepEqual(problemsOf(base({ store: 'sqlite', sqlitePath: '/var/lib/b2b-sidecar/fleet.db' })), []);
    assert.deepEqual(problemsOf(base({ store: 'memcached' })).length, 1);
  });

  it('accepts redis://, rediss:// and unix:// URLs and refuses a password in one (without echoing it)', () => {
    for (const url of ['redis://redis.internal:6379/0', 'rediss://b2b-sidecar@redis.internal:6380', 'unix:///run/redis/redis.sock']) {
      assert.deepEqual(problemsOf(base({ store: 'redis', redisUrl: url })), [], url);
    }
    const problems = problemsOf(base({ store: 'redis', redisUrl: 'redis://b2b:S3cret-pass@redis.internal:6379' }));
    assert.deepEqual(problems, ['fleet.redisUrl (B2B_FLEET_REDIS_URL): must not contain a password: put it in fleet.redisPasswordFile (an ACL user name may stay in the URL)']);
    assert.ok(!problems.join().includes('S3cret-pass'));
    assert.equal(problemsOf(base({ store: 'redis', redisUrl: 'http://redis.internal' })).length, 1);
  });

  it('redacts the Redis URL wherever the config is printed', () => {
    const config = validateConfig(base({ store: 'redis', redisUrl: 'redis://b2b@redis.internal:6379' }));
    assert.equal((redactConfig(config) as Raw).fleet.redisUrl, '[REDACTED]');
  });

  it('names each environment variable by the project\'s rule', () => {
    assert.equal(envNameOf(['fleet', 'store']), 'B2B_FLEET_STORE');
    assert.equal(envNameOf(['fleet', 'onStoreDown']), 'B2B_FLEET_ON_STORE_DOWN');
    assert.equal(envNameOf(['fleet', 'redisPasswordFile']), 'B2B_FLEET_REDIS_PASSWORD_FILE');
  });

  it('gives the claim a lifetime longer than the gentoken deadline, whatever the deadline', () => {
    const store = { kind: 'sqlite' } as FleetStore;
    for (const tokenTimeoutMs of [100, 10_000, 2 ** 31 - 1]) {
      const config = validateConfig({ ...base({ store: 'sqlite', sqlitePath: '/x.db' }), service: { baseUrl: 'https://api.example.com', tokenTimeoutMs } });
      assert.ok(fleetOptions(config, store).claimMs > tokenTimeoutMs);
    }
  });
});
