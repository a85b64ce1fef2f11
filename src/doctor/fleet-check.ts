import { fleetRecordKey } from '../fleet/fleet-record.js';
import { FleetStoreError, type FleetStore } from '../fleet/fleet-store.js';
import type { DoctorStep } from './doctor-report.js';

/**
 * The fleet store (`fleet.store`, docs/fleet.md): reachable, authenticated, the record of this
 * key readable. Only reads: doctor never claims, publishes or invalidates, so it cannot move the
 * record a running fleet shares.
 */
export async function checkFleetStore(store: FleetStore, baseUrl: string, apiKey: string, wallNow = Date.now()): Promise<DoctorStep> {
  const key = fleetRecordKey(baseUrl, apiKey);
  try {
    const record = await store.read(key);
    const found = record === undefined
      ? 'no record for this key yet (the first sidecar to start publishes one)'
      : `record version ${record.version}, minted by ${record.mintedBy} ${Math.max(0, Math.round((wallNow - record.mintedAtWall) / 1000))} s ago${record.invalid ? ', marked invalid (its token was refused; the next renewal replaces it)' : ''}`;
    return { step: 'fleet', ok: true, detail: `${store.kind} store reachable and readable: ${found}` };
  } catch (err) {
    const why = err instanceof FleetStoreError ? err.message : `unexpected ${(err as Error)?.name ?? 'error'}`;
    return {
      step: 'fleet', ok: false, detail: `${store.kind} store: ${why}`,
      hint: `check the fleet.${store.kind === 'sqlite' ? 'sqlitePath' : store.kind === 'redis' ? 'redisUrl and fleet.redisPasswordFile' : 'kubernetesSecret and the pod\'s RBAC'} settings; run serves its token meanwhile and follows fleet.onStoreDown`,
    };
  } finally {
    await store.close();
  }
}
