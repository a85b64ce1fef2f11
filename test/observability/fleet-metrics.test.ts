import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMetrics, createRegistry } from '../../src/observability/metrics.js';
import type { FleetStatus, TokenStatus } from '../../src/observability/status.js';

const FLEET: FleetStatus = {
  store: 'sqlite', credential: 'default', state: 'up', since: '2026-01-01T00:00:00.000Z', source: 'shared', onStoreDown: 'local',
  version: 12, mintedBy: 'host-a/1', mintedAt: '2026-01-01T00:00:00.000Z', ageSeconds: 5, lifetimeSeconds: 900,
};

function setup(fleet: FleetStatus | undefined) {
  const registry = createRegistry();
  const state: { token: TokenStatus } = { token: { ready: true, live: true, ageSeconds: 0, expiresInSeconds: 0, warnings: [], ...(fleet ? { fleet } : {}) } };
  const metrics = createMetrics(registry, { status: () => ({ token: state.token }), replayHeldBytes: () => 0 });
  return { registry, state, metrics };
}

describe('fleet metrics', () => {
  it('exports the store state, the token source, the record version and lifetime from the one status, labelled by credential', async () => {
    const { registry, state } = setup(FLEET);
    let text = await registry.metrics();
    assert.match(text, /^b2b_sidecar_fleet_store_up\{credential="default",store="sqlite"\} 1$/m);
    assert.match(text, /^b2b_sidecar_fleet_token_source\{credential="default",source="shared"\} 1$/m);
    assert.match(text, /^b2b_sidecar_fleet_token_source\{credential="default",source="local"\} 0$/m);
    assert.match(text, /^b2b_sidecar_fleet_record_version\{credential="default"\} 12$/m);
    assert.match(text, /^b2b_sidecar_fleet_token_lifetime_seconds\{credential="default"\} 900$/m);
    state.token = { ...state.token, fleet: { ...FLEET, state: 'down', source: 'local' } };
    text = await registry.metrics();
    assert.match(text, /^b2b_sidecar_fleet_store_up\{credential="default",store="sqlite"\} 0$/m);
    assert.match(text, /^b2b_sidecar_fleet_token_source\{credential="default",source="local"\} 1$/m);
  });

  it('counts claims by result, publish conflicts and store errors by operation', async () => {
    const { registry, metrics } = setup(FLEET);
    metrics.fleetClaim('default', 'won');
    metrics.fleetClaim('default', 'lost');
    metrics.fleetClaim('default', 'lost');
    metrics.fleetPublishConflict('default');
    metrics.fleetStoreError('default', 'read');
    const text = await registry.metrics();
    assert.match(text, /^b2b_sidecar_fleet_claims_total\{credential="default",result="lost"\} 2$/m);
    assert.match(text, /^b2b_sidecar_fleet_publish_conflicts_total\{credential="default"\} 1$/m);
    assert.match(text, /^b2b_sidecar_fleet_store_errors_total\{credential="default",operation="read"\} 1$/m);
  });

  it('exports no fleet series without a store (fleet.store none)', async () => {
    const { registry } = setup(undefined);
    assert.doesNotMatch(await registry.metrics(), /^b2b_sidecar_fleet_\w+\{/m);
  });
});
