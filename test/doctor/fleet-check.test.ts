import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { checkFleetStore } from '../../src/doctor/fleet-check.js';
import { formatSteps } from '../../src/doctor/doctor-report.js';
import { fleetRecordKey } from '../../src/fleet/fleet-record.js';
import { openSqliteStore } from '../../src/fleet/sqlite-store.js';

const BASE = 'https://vendor.test/';
const API_KEY = 'doctor-fleet-apikey-0123';

describe('doctor: the fleet store step', () => {
  it('reads the record and names its version and minter, without moving it or taking the claim', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'b2b-doctor-fleet-')), 'fleet.db');
    const fleet = await openSqliteStore({ path });
    const key = fleetRecordKey(BASE, API_KEY);
    await fleet.publish(key, { token: 'shared-token-xxxxxxxxxxxx', lifetimeSeconds: 900, mintedAtWall: Date.now() - 30_000, mintedBy: 'host-a/7' }, 0);
    const step = await checkFleetStore(await openSqliteStore({ path }), BASE, API_KEY);
    assert.equal(step.ok, true);
    assert.match(step.detail, /^sqlite store reachable and readable: record version 1, minted by host-a\/7 30 s ago$/);
    assert.ok(!formatSteps([step]).includes('shared-token'), 'the token is never shown');
    assert.equal((await fleet.read(key))?.version, 1, 'the record is not moved');
    assert.equal(await fleet.claim(key, 'peer', 10_000), true, 'doctor took no claim');
    await fleet.close();
  });

  it('fails naming the store and the keys to check when it cannot be read', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'b2b-doctor-fleet-')), 'missing', 'fleet.db');
    const step = await checkFleetStore(await openSqliteStore({ path }), BASE, API_KEY);
    assert.equal(step.ok, false);
    assert.match(step.detail, /^sqlite store: cannot open the SQLite store .*missing\/fleet\.db/);
    assert.match(step.hint ?? '', /fleet\.sqlitePath/);
  });
});
